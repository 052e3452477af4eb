#!/usr/bin/env python3
"""What store-local object numbers would save, table by table (issue 17.5).

  bench/catalog/number_estimate.py STORE/.ki/index

For each table: its pages (mdb_stat), entries and key + value bytes (mdb_dump),
its fill, and the pages it would take at the same fill if every 32-byte digest
its rows hold (the count per row is this file's table, from docs/format.md)
were a 4-byte object number: 28 bytes a digest less. meta keeps its digest
keys (it would be the digest -> number map). An estimate, not a layout.
"""
import subprocess, sys
D=sys.argv[1]
# 32-byte digests a key / a value holds that a 4-byte object number could replace
# (meta keeps its digest keys: it is the digest -> number map). Since store
# format 9 the cohorts and events values hold their digests as 32 raw bytes
# too: a kernel cohort five (correctness, environment, operation, protocol,
# workload), an event its comparisonKey.
digs={'objects':(1,0),'meta':(0,0),'refs':(2,0),'absent':(1,0),'names':(0,1),'namesof':(1,0),
'nameset':(1,0),'docs':(1,1),'catalog.runs':(1,1),'catalog.cohort':(2,0),'catalog.cohorts':(1,5),'catalog.events':(2,1),
'catalog.facts':(2,0),'catalog.ids':(1,1),'catalog.ranks':(1,0)}
stat=subprocess.run(['mdb_stat','-a',D],capture_output=True,text=True).stdout
pages={};cur=None
for l in stat.splitlines():
    if l.startswith('Status of'): cur=l.split()[2]; pages[cur]=0
    elif cur and ('Branch pages' in l or 'Leaf pages' in l or 'Overflow pages' in l): pages[cur]+=int(l.split()[-1])
tot_now=tot_new=0
print('| table | pages | entries | key+value bytes | fill | digests a row (key, value) | pages with numbers | saved |')
print('| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |')
for t,(dk,dv) in sorted(digs.items(), key=lambda kv:-pages.get(kv[0],0)):
    out=subprocess.run(['mdb_dump','-s',t,D],capture_output=True,text=True).stdout.splitlines()
    rows=[l.strip() for l in out if l.startswith(' ')]
    ks=rows[0::2]; vs=rows[1::2]
    n=len(ks); kb=sum(len(k)//2 for k in ks); vb=sum(len(v)//2 for v in vs)
    node=kb+vb+10*n
    p=pages.get(t,0)
    fill=node/(p*4080) if p else 0
    ranks_extra = 0
    if t=='catalog.ranks':  # values: 37-byte records led by a run digest
        ranks_extra = sum((len(v)//2-12)//37 for v in vs)*28
    saved=28*(dk+dv)*n+ranks_extra
    newp=round((node-saved)/(4080*fill)) if p else 0
    tot_now+=p; tot_new+=newp
    print('| %s | %d | %d | %d | %.0f%% | %d, %d | %d | %d |'%(t,p,n,kb+vb,fill*100,dk,dv,newp,p-newp))
print('total of these tables: %d pages -> %d'%(tot_now,tot_new))
