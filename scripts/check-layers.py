#!/usr/bin/env python3
"""Checks that ki's modules keep to their layers (docs/architecture.md).

The table is cmake/modules.cmake, the one the build reads too. Two checks:

  includes (always): every #include in a module's folder, and in the public
  headers of include/ki/ it owns, names a header of the module itself, a
  public header of a module it may call, a header another such module
  SHARES, or a system header no module claims (SYSTEM) or that it claims.

  symbols (--objects FILE, after the library is built): every symbol a
  module's object files leave undefined and another module's objects define
  belongs to a module it may call. This catches a call made through a
  declaration of its own, which the include check cannot see.

Prints `path:line: error: ...` for each breach and exits 1; silent and 0
when the tree keeps to the table. The build runs it (CMakeLists.txt) so
that a breach fails the build; tests/layers/check_layers_test.py plants
breaches in a scratch tree.

  scripts/check-layers.py [--root DIR] [--objects FILE | --doc docs/architecture.md]

--doc compares the drawing of the layers in docs/architecture.md with the
table instead (the ctest does; the build does not, so that a doc edit never
breaks a build).

FILE (written by CMake) holds one line per module: its name, then its
object files, separated by ';'.
"""

import argparse
import fnmatch
import os
import re
import subprocess
import sys

SOURCE_EXT = ('.h', '.hpp', '.cc', '.cpp', '.c', '.cu', '.cuh', '.inc')
KEYWORDS = ('DIR', 'HEADERS', 'SHARES', 'USES', 'PRIVATE', 'SYSTEM', 'EXTERN')
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
TABLE = 'cmake/modules.cmake'


class Module:
    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.dir = 'src/' + name
        self.headers = []
        self.shares = []
        self.uses = []
        self.private = []
        self.system = []
        self.extern = []


def parse_table(path):
    """The ki_module(...) calls of cmake/modules.cmake, in order."""
    text = open(path, encoding='utf-8').read()
    # Comments out (keeping the newlines, for line numbers).
    text = re.sub(r'#[^\n]*', '', text)
    modules = []
    for m in re.finditer(r'\bki_module\s*\(([^)]*)\)', text):
        line = text.count('\n', 0, m.start()) + 1
        words = m.group(1).split()
        if not words:
            raise SystemExit(f'{path}:{line}: error: ki_module() without a name')
        mod = Module(words[0], line)
        key = None
        for w in words[1:]:
            if w in KEYWORDS:
                key = w
                if key == 'DIR':
                    mod.dir = None
                continue
            if key is None:
                raise SystemExit(f'{path}:{line}: error: `{w}` before any keyword in ki_module({mod.name})')
            if key == 'DIR':
                mod.dir = w.rstrip('/')
            else:
                getattr(mod, key.lower()).append(w)
        modules.append(mod)
    return modules


class Layers:
    def __init__(self, root):
        self.root = root
        self.errors = []
        table = os.path.join(root, TABLE)
        mods = parse_table(table)
        self.modules = {}
        for m in mods:
            if m.name in self.modules:
                self.error(TABLE, m.line, f'module {m.name} is named twice')
            self.modules[m.name] = m
        self.owner = {}  # include/ki/ header -> module
        for m in mods:
            for dep in m.uses + m.private:
                if dep not in self.modules:
                    self.error(TABLE, m.line, f'{m.name} uses {dep}, which is no module of the table')
            for h in m.headers:
                if h in self.owner:
                    self.error(TABLE, m.line, f'ki/{h} belongs to {self.owner[h]} and {m.name}')
                self.owner[h] = m.name
                if not os.path.isfile(os.path.join(root, 'include/ki', h)):
                    self.error(TABLE, m.line, f'{m.name}\'s header ki/{h} does not exist')
            for s in m.shares:
                if not os.path.isfile(os.path.join(root, m.dir, s)):
                    self.error(TABLE, m.line, f'{m.name} shares {m.dir}/{s}, which does not exist')
        self.check_cycles(mods)
        self.allowed = {m.name: self.reach(m.name) for m in mods}
        self.dirs = {m.dir: m.name for m in mods}

    def error(self, path, line, msg):
        where = f'{path}:{line}' if line else path
        self.errors.append(f'{where}: error: {msg}')

    def check_cycles(self, mods):
        state = {}

        def visit(name, path):
            if state.get(name) == 'done':
                return
            if state.get(name) == 'open':
                cycle = path[path.index(name):] + [name]
                self.error(TABLE, self.modules[name].line, 'modules call each other: ' + ' -> '.join(cycle))
                return
            state[name] = 'open'
            mod = self.modules.get(name)
            for dep in (mod.uses + mod.private) if mod else []:
                if dep in self.modules:
                    visit(dep, path + [name])
            state[name] = 'done'

        for m in mods:
            visit(m.name, [])

    def exported(self, name, seen=None):
        """`name` and what its callers may reach through it (USES, transitively)."""
        seen = set() if seen is None else seen
        if name in seen or name not in self.modules:
            return seen
        seen.add(name)
        for dep in self.modules[name].uses:
            self.exported(dep, seen)
        return seen

    def reach(self, name):
        allowed = {name}
        mod = self.modules[name]
        for dep in mod.uses:
            allowed |= self.exported(dep)
        for dep in mod.private:
            allowed.add(dep)
            allowed |= self.exported(dep)
        return allowed

    def module_of_path(self, rel):
        """The module a repository-relative path belongs to (None: no module's)."""
        rel = rel.replace(os.sep, '/')
        if rel.startswith('include/ki/'):
            return self.owner.get(rel[len('include/ki/'):])
        best = None
        for d, name in self.dirs.items():
            if (rel == d or rel.startswith(d + '/')) and (best is None or len(d) > len(best)):
                best = d
        return self.dirs[best] if best else None

    # ---- the include check ----

    def files(self):
        """(path, module) of every file the include check reads."""
        for d, name in sorted(self.dirs.items()):
            top = os.path.join(self.root, d)
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames.sort()
                for f in sorted(filenames):
                    if f.endswith(SOURCE_EXT):
                        rel = os.path.relpath(os.path.join(dirpath, f), self.root).replace(os.sep, '/')
                        # A nested module's files are its own (none today).
                        if self.module_of_path(rel) == name:
                            yield rel, name
        for h, name in sorted(self.owner.items()):
            if os.path.isfile(os.path.join(self.root, 'include/ki', h)):
                yield 'include/ki/' + h, name

    def check_tree(self):
        src = os.path.join(self.root, 'src')
        for entry in sorted(os.listdir(src)) if os.path.isdir(src) else []:
            if os.path.isdir(os.path.join(src, entry)) and ('src/' + entry) not in self.dirs:
                self.error('src/' + entry, 1, f'folder of no module: add a ki_module({entry} ...) line to {TABLE}')
        inc = os.path.join(self.root, 'include/ki')
        for entry in sorted(os.listdir(inc)) if os.path.isdir(inc) else []:
            if entry.endswith(SOURCE_EXT) and entry not in self.owner:
                self.error('include/ki/' + entry, 1, f'header of no module: name it in a HEADERS list of {TABLE}')
        for rel, name in self.files():
            self.check_file(rel, name)

    def resolve(self, rel, inc):
        """Repository-relative path of a quoted include, as the compiler finds it."""
        here = os.path.dirname(rel)
        for base in (here, 'src', 'include'):
            cand = os.path.normpath(os.path.join(base, inc)).replace(os.sep, '/')
            if not cand.startswith('../') and os.path.isfile(os.path.join(self.root, cand)):
                return cand
        first = inc.split('/')[0]
        if ('src/' + first) in self.dirs:
            return 'src/' + inc  # a header of that module that does not exist (yet)
        if inc.startswith('ki/'):
            return 'include/' + inc
        return None

    def check_file(self, rel, name):
        allowed = self.allowed[name]
        try:
            lines = open(os.path.join(self.root, rel), encoding='utf-8', errors='replace').readlines()
        except OSError as e:
            self.error(rel, 1, f'cannot read: {e.strerror}')
            return
        for n, line in enumerate(lines, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            quote, inc = m.group(1), m.group(2)
            shown = f'"{inc}"' if quote == '"' else f'<{inc}>'
            if quote == '<' and not inc.startswith('ki/'):
                owners = [mod.name for mod in self.modules.values()
                          if any(fnmatch.fnmatchcase(inc, p) for p in mod.system)]
                if owners and name not in owners:
                    self.error(rel, n, f'{name} includes {shown}, which only {", ".join(owners)} may include '
                                       f'(SYSTEM in {TABLE})')
                continue
            target = self.resolve(rel, inc)
            if target is None:
                continue
            if target.startswith('include/ki/') and target[len('include/ki/'):] not in self.owner:
                self.error(rel, n, f'{name} includes {shown}, a header of no module (HEADERS in {TABLE})')
                continue
            tmod = self.module_of_path(target)
            if tmod is None or tmod == name:
                continue
            if tmod not in allowed:
                mod = self.modules[name]
                self.error(rel, n, f'{name} includes {shown} of module {tmod}, which it may not call '
                                   f'({name} uses {", ".join(mod.uses + mod.private) or "nothing"} in {TABLE})')
                continue
            if not target.startswith('include/'):
                tdir = self.modules[tmod].dir
                inside = target[len(tdir) + 1:]
                if inside not in self.modules[tmod].shares:
                    self.error(rel, n, f'{name} includes {shown}, a header {tmod} keeps to itself '
                                       f'(its public headers are in include/ki/; SHARES in {TABLE})')

    # ---- the drawing in docs/architecture.md ----

    def check_doc(self, rel):
        """The block between `<!-- layers: begin` and `<!-- layers: end` of
        `rel` draws the table: one row per module, `name ── uses...`, a
        private one as `name(private)`, notes in parentheses after them."""
        try:
            lines = open(os.path.join(self.root, rel), encoding='utf-8').read().split('\n')
        except OSError as e:
            self.error(rel, None, f'cannot read: {e.strerror}')
            return
        begin = next((i for i, l in enumerate(lines) if l.startswith('<!-- layers: begin')), None)
        end = next((i for i, l in enumerate(lines) if l.startswith('<!-- layers: end')), None)
        if begin is None or end is None or end < begin:
            self.error(rel, None, 'no `<!-- layers: begin` ... `<!-- layers: end` block drawing the modules')
            return
        drawn = {}
        for n in range(begin + 1, end):
            tokens = lines[n].split()
            if not tokens or tokens[0].startswith('```'):
                continue
            name, uses, private = tokens[0], set(), set()
            if len(tokens) > 1 and tokens[1] == '──':
                for t in tokens[2:]:
                    if t.startswith('('):
                        break
                    if t.endswith('(private)'):
                        private.add(t[:-len('(private)')])
                    else:
                        uses.add(t)
            if name in drawn:
                self.error(rel, n + 1, f'{name} is drawn twice')
            drawn[name] = (n + 1, uses, private)
            mod = self.modules.get(name)
            if mod is None:
                self.error(rel, n + 1, f'{name} is drawn but is no module of {TABLE}')
            elif (uses, private) != (set(mod.uses), set(mod.private)):
                def say(u, p):
                    return ' '.join(sorted(u) + [d + '(private)' for d in sorted(p)]) or 'nothing'
                self.error(rel, n + 1, f'the drawing has {name} ── {say(uses, private)}; '
                                       f'{TABLE} has {name} ── {say(mod.uses, mod.private)}')
        for name, mod in self.modules.items():
            if name not in drawn:
                self.error(rel, end + 1, f'module {name} of {TABLE} is not drawn')

    # ---- the symbol check ----

    def check_objects(self, listing):
        nm = os.environ.get('NM', 'nm')
        defined = {}   # symbol -> modules that define it (strongly)
        undefined = []  # (module, object, symbol)
        for raw in open(listing, encoding='utf-8'):
            parts = [p for p in raw.strip().split(';') if p]
            if not parts:
                continue
            name, objs = parts[0], parts[1:]
            if name not in self.modules:
                self.error(listing, 1, f'objects of {name}, which is no module of {TABLE}')
                continue
            if not objs:
                continue
            # One nm for all of a module's objects: each line names its file.
            out = subprocess.run([nm, '-P', '-A'] + objs, capture_output=True, text=True)
            if out.returncode != 0:
                self.error(objs[0], None, f'nm failed: {out.stderr.strip()}')
                continue
            for line in out.stdout.splitlines():
                obj, _, rest = line.partition(': ')
                p = rest.split()
                if len(p) < 2:
                    continue
                sym, kind = p[0], p[1]
                if kind in 'TDBR':
                    defined.setdefault(sym, set()).add(name)
                elif kind == 'U':
                    undefined.append((name, obj, sym))
        found = []
        for name, obj, sym in undefined:
            owners = defined.get(sym)
            if owners is None:
                # A library's: may the module call it (EXTERN)?
                claims = [m.name for m in self.modules.values()
                          if any(fnmatch.fnmatchcase(sym, p) for p in m.extern)]
                if claims and name not in claims:
                    found.append((obj, name, sym, claims, 'the library that ' + ', '.join(claims) + ' alone may call (EXTERN)'))
                continue
            if name in owners or owners & self.allowed[name]:
                continue
            found.append((obj, name, sym, sorted(owners), 'defined by ' + ', '.join(sorted(owners)) + ', which it may not call'))
        if found:
            try:
                demangled = subprocess.run(['c++filt'], input='\n'.join(f[2] for f in found),
                                           capture_output=True, text=True).stdout.splitlines()
            except OSError:
                demangled = []  # no c++filt: the mangled names
            if len(demangled) != len(found):
                demangled = [f[2] for f in found]
            seen = set()
            for (obj, name, sym, owners, why), pretty in zip(found, demangled):
                if (obj, sym) in seen:
                    continue
                seen.add((obj, sym))
                self.error(source_of(obj), None, f'{name} calls {pretty}, {why} ({TABLE})')


def source_of(obj):
    """The source file a CMake object file was compiled from, where its path says."""
    m = re.search(r'CMakeFiles/[^/]+\.dir/(.+?)\.o$', obj.replace(os.sep, '/'))
    return m.group(1) if m else obj


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument('--objects', help='module;object;... lines: check symbols instead of includes')
    ap.add_argument('--doc', help='check the drawing of the layers in this file (docs/architecture.md) instead')
    args = ap.parse_args()
    layers = Layers(args.root)
    if not layers.errors:
        if args.objects:
            layers.check_objects(args.objects)
        elif args.doc:
            layers.check_doc(args.doc)
        else:
            layers.check_tree()
    for e in layers.errors:
        print(e, file=sys.stderr)
    if layers.errors:
        print(f'ki: error: {len(layers.errors)} breach(es) of the layers of docs/architecture.md '
              f'({TABLE})', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
