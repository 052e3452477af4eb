#!/usr/bin/env python3
"""ctest `layers`: scripts/check-layers.py passes the tree as it is, and
refuses each kind of breach planted in a scratch copy of it, naming the
file, the line and what it may not reach; its symbol check refuses a call
made through a declaration of the caller's own (two small objects compiled
here); and the drawing of the layers in docs/architecture.md is the table's.

  check_layers_test.py SOURCE_DIR CXX
"""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1])
CXX = sys.argv[2]
CHECKER = os.path.join(ROOT, 'scripts/check-layers.py')
failures = []


def check(root, *extra):
    r = subprocess.run([sys.executable, CHECKER, '--root', root, *extra], capture_output=True, text=True)
    return r.returncode, r.stderr


def breaches(err):
    return len([l for l in err.splitlines() if ': error: ' in l and not l.startswith('ki: error:')])


def expect(cond, what, output=''):
    if not cond:
        failures.append(what + ('\n' + output if output else ''))


def first_source(root, folder):
    d = os.path.join(root, folder)
    return folder + '/' + sorted(f for f in os.listdir(d) if f.endswith('.cc'))[0]


def plant(root, rel, text):
    """Appends one line to rel; returns that line's number."""
    path = os.path.join(root, rel)
    with open(path, encoding='utf-8') as f:
        body = f.read()
    if body and not body.endswith('\n'):
        body += '\n'
    with open(path, 'w', encoding='utf-8') as f:
        f.write(body + text + '\n')
    return body.count('\n') + 1


def copy_tree(dst):
    for part in ('cmake', 'scripts', 'src', 'include', 'cli', 'kernels'):
        shutil.copytree(os.path.join(ROOT, part), os.path.join(dst, part),
                        ignore=shutil.ignore_patterns('*.o', '__pycache__'))


# 1. The tree as it is keeps to its layers.
rc, err = check(ROOT)
expect(rc == 0 and err == '', f'the tree itself fails the check (exit {rc})', err)

with tempfile.TemporaryDirectory() as tmp:
    # 2. A scratch copy passes too, before anything is planted ...
    scratch = os.path.join(tmp, 'tree')
    copy_tree(scratch)
    rc, err = check(scratch)
    expect(rc == 0, f'the scratch copy fails before any breach (exit {rc})', err)

    # ... and each planted breach is reported where it is.
    cases = []
    f = first_source(scratch, 'src/catalog')
    cases.append((f, plant(scratch, f, '#include "index/lmdb.h"'),
                  'catalog includes "index/lmdb.h" of module index, which it may not call'))
    f = first_source(scratch, 'src/odb')
    cases.append((f, plant(scratch, f, '#include "ki/fleet.h"'),
                  'odb includes "ki/fleet.h" of module fleet, which it may not call'))
    f = first_source(scratch, 'src/sign')
    cases.append((f, plant(scratch, f, '#include "odb/store_impl.h"'),
                  'sign includes "odb/store_impl.h", a header odb keeps to itself'))
    f = first_source(scratch, 'src/report')
    cases.append((f, plant(scratch, f, '#include "../odb/frame.h"'),
                  'report includes "../odb/frame.h", a header odb keeps to itself'))
    f = first_source(scratch, 'src/remote')
    cases.append((f, plant(scratch, f, '#  include <lmdb.h>'),
                  'remote includes <lmdb.h>, which only index may include'))
    f = first_source(scratch, 'src/stats')
    cases.append((f, plant(scratch, f, '#include "ki/catalog.h"'),
                  'stats includes "ki/catalog.h" of module catalog, which it may not call'))
    # A public header is checked as its owner: the store's may not include the catalog's.
    cases.append(('include/ki/tag.h', plant(scratch, 'include/ki/tag.h', '#include "ki/catalog.h"'),
                  'odb includes "ki/catalog.h" of module catalog, which it may not call'))
    open(os.path.join(scratch, 'include/ki/zz_unowned.h'), 'w').close()
    cases.append(('include/ki/zz_unowned.h', 1, 'header of no module'))
    os.mkdir(os.path.join(scratch, 'src/zz_new'))
    cases.append(('src/zz_new', 1, 'folder of no module'))
    # Allowed ones stay allowed: a module's own header, a shared one, a lower layer's.
    plant(scratch, first_source(scratch, 'src/run'), '#include "json/fields.h"\n#include "run/process.h"\n#include "ki/digest.h"')

    rc, err = check(scratch)
    expect(rc == 1, f'the check passed a tree with breaches (exit {rc})', err)
    for rel, line, text in cases:
        want = f'{rel}:{line}: error: {text}'
        expect(want in err, f'not reported: {want}', err)
    expect(breaches(err) == len(cases), f'{breaches(err)} breaches reported, {len(cases)} planted', err)

    # 3. A table whose modules call each other is refused.
    cyc = os.path.join(tmp, 'cycle')
    copy_tree(cyc)
    table = os.path.join(cyc, 'cmake/modules.cmake')
    text = open(table, encoding='utf-8').read()
    text = text.replace('ki_module(env      HEADERS env.h USES util)', 'ki_module(env      HEADERS env.h USES util odb)')
    open(table, 'w', encoding='utf-8').write(text)
    rc, err = check(cyc)
    expect(rc == 1 and 'modules call each other' in err and 'env -> odb' in err,
           'a cycle in the table is not refused', err)

    # 4. The symbol check: stats (which may call only util) calling a fleet
    # function through a declaration of its own is refused; fleet calling
    # stats is not.
    objs = os.path.join(tmp, 'objs')
    os.mkdir(objs)
    sources = {
        'low.cc': 'namespace ki { int LowFn() { return 1; } }\n',
        'bad.cc': 'namespace ki { int HighFn(); int Sneaky() { return HighFn(); } }\n',
        'high.cc': 'namespace ki { int LowFn(); int HighFn() { return LowFn() + 1; } }\n',
        'lmdb_call.cc': 'extern "C" void mdb_txn_abort(void*);\nvoid AbortIt(void* t) { mdb_txn_abort(t); }\n',
    }
    for name, body in sources.items():
        with open(os.path.join(objs, name), 'w') as f:
            f.write(body)
        r = subprocess.run([CXX, '-c', name, '-o', name[:-3] + '.o'], cwd=objs, capture_output=True, text=True)
        expect(r.returncode == 0, f'{CXX} could not compile {name}', r.stderr)
    listing = os.path.join(objs, 'objects.txt')
    with open(listing, 'w') as f:
        f.write(f'stats;{objs}/low.o;{objs}/bad.o\nfleet;{objs}/high.o\n')
    rc, err = check(ROOT, '--objects', listing)
    expect(rc == 1 and f'{objs}/bad.o: error: stats calls ki::HighFn(), defined by fleet, which it may not call' in err
           and breaches(err) == 1, f'the symbol check missed the call up (exit {rc})', err)
    with open(listing, 'w') as f:
        f.write(f'stats;{objs}/low.o\nfleet;{objs}/high.o\n')
    rc, err = check(ROOT, '--objects', listing)
    expect(rc == 0 and err == '', f'the symbol check refused a call down (exit {rc})', err)
    # LMDB is called by index alone (every call goes through its wrapper's
    # fault guard; odb neither), whatever declares it.
    for module, refused in (('remote', True), ('odb', True), ('index', False)):
        with open(listing, 'w') as f:
            f.write(f'{module};{objs}/lmdb_call.o\n')
        rc, err = check(ROOT, '--objects', listing)
        want = f'{objs}/lmdb_call.o: error: {module} calls mdb_txn_abort, the library that index alone may call'
        expect((rc == 1 and want in err) if refused else (rc == 0 and err == ''),
               f'{module} calling LMDB: exit {rc}', err)

# 5. The drawing in docs/architecture.md matches the table, and a drawing
# that leaves out a dependency is refused at its line.
rc, err = check(ROOT, '--doc', 'docs/architecture.md')
expect(rc == 0 and err == '', f'docs/architecture.md does not draw cmake/modules.cmake (exit {rc})', err)
with tempfile.TemporaryDirectory() as tmp:
    copy_tree(tmp)
    os.mkdir(os.path.join(tmp, 'docs'))
    lines = open(os.path.join(ROOT, 'docs/architecture.md'), encoding='utf-8').read().split('\n')
    row = next(i for i, l in enumerate(lines) if l.startswith('audit ') and '──' in l)
    lines[row] = 'audit    ── catalog'
    open(os.path.join(tmp, 'docs/architecture.md'), 'w', encoding='utf-8').write('\n'.join(lines))
    rc, err = check(tmp, '--doc', 'docs/architecture.md')
    want = (f'docs/architecture.md:{row + 1}: error: the drawing has audit ── catalog; '
            f'cmake/modules.cmake has audit ── catalog sign')
    expect(rc == 1 and want in err, f'a wrong drawing is not refused as: {want}', err)

for f in failures:
    print('FAIL:', f, file=sys.stderr)
print(f'layers: {"FAILED" if failures else "ok"} ({len(failures)} failures)')
sys.exit(1 if failures else 0)
