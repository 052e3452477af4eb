#!/usr/bin/python3
# Pages that candidate layouts of the index's tables would take, each built
# from a real store's entries into a scratch LMDB environment and measured
# as the size of its compacted copy (mdb_env_copy2 MDB_CP_COMPACT): LMDB's
# own per-table statistics (mdb_stat) count no sub-table pages of a
# MDB_DUPSORT table, so they undercount a table kept as duplicates (refs:
# 353 "pages" where the file holds 781).
#   /usr/bin/python3 bench/catalog/layout_pages.py STORE/.ki/index
# Needs Debian's python3-lmdb (apt-get install python3-lmdb).
import os, shutil, sys, tempfile
from collections import defaultdict
import lmdb

src = lmdb.open(sys.argv[1], readonly=True, max_dbs=64, lock=False)

def rows(name):
    db = src.open_db(name.encode(), create=False)
    with src.begin(db=db) as t:
        return [(bytes(k), bytes(v)) for k, v in t.cursor()]

def unleb(b, i):
    n = s = 0
    while True:
        c = b[i]; i += 1; n |= (c & 0x7f) << s; s += 7
        if not c & 0x80:
            return n, i

# digest -> object number (meta values of format 10 and on, flag 0x10)
num = {}
for k, v in rows('meta'):
    i = 3
    for _ in range(3):
        _, i = unleb(v, i)
    if v[0] & 0x10:
        num[k] = unleb(v, i)[0]

def pages(items, dup=False, fixed=False):
    """Pages of one table holding `items` ((key, value); for dup, the key's
    first 32 bytes are LMDB's key and the rest its duplicate)."""
    tmp = tempfile.mkdtemp()
    try:
        env = lmdb.open(tmp + '/e', max_dbs=4, map_size=1 << 32)
        db = env.open_db(b't', dupsort=dup, dupfixed=fixed)
        with env.begin(write=True) as t:
            c = t.cursor(db=db)
            for k, v in sorted(items):
                if dup:
                    c.put(k[:32], k[32:], append=True) or c.put(k[:32], k[32:], dupdata=True)
                else:
                    t.put(k, v, db=db, append=True)
        os.mkdir(tmp + '/c')
        env.copy(tmp + '/c', compact=True)
        env.close()
        return os.path.getsize(tmp + '/c/data.mdb') // 4096 - 2  # less meta pages
    finally:
        shutil.rmtree(tmp)

def n4(d):
    return num[d].to_bytes(4, 'big')

refs = [(k, b'') for k, _ in rows('refs')]
coded = [(k, v) for k, v in refs if len(k) == 65]
print('refs, %d keys under %d targets' % (len(refs), len({k[:32] for k, _ in refs})))
print('  plain (format 10)                      %5d' % pages(refs))
print('  set table (format 11)                  %5d' % pages(refs, dup=True))
print('  set table, fixed size (coded only)     %5d' % pages(coded, dup=True, fixed=True))
byn = [(k[:32] + n4(k[32:64]) + k[64:], b'') for k, _ in refs]
print('  referrer numbered, plain               %5d' % pages(byn))
print('  referrer numbered, set table           %5d' % pages(byn, dup=True))
print('  referrer numbered, fixed (coded only)  %5d' % pages([kv for kv in byn if len(kv[0]) == 37], dup=True, fixed=True))
co = [(k, b'') for k, _ in rows('catalog.cohort')]
print('catalog.cohort, %d keys' % len(co))
print('  plain                                  %5d' % pages(co))
print('  set table                              %5d' % pages(co, dup=True))
print('  set table, fixed size                  %5d' % pages(co, dup=True, fixed=True))
print('  run numbered, plain                    %5d' % pages([(k[:32] + n4(k[32:]), b'') for k, _ in co if k[32:] in num]))
try:
    names = rows('names')
except lmdb.NotFoundError:
    names = []
ns = rows('nameset')
print('names %d, nameset %d entries' % (len(names), len(ns)))
if names:
    print('  names + nameset (format 10)            %5d' % (pages(names) + pages(ns)))
    latest = {k + v for k, v in names}
    print('  nameset marking the latest (format 11) %5d' % pages([(k, b'\x01' if k in latest else b'') for k, _ in ns]))
    hold = defaultdict(list)
    for k, _ in ns:
        hold[k[:-32]].append(k[-32:])
    first = dict(names)
    print('  names valued with every holder         %5d' % pages(
        [(n, first.get(n, b'') + b''.join(h for h in sorted(hs) if h != first.get(n))) for n, hs in hold.items()]))
else:
    print('  nameset (format 11)                    %5d' % pages(ns))
