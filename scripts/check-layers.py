#!/usr/bin/env python3
"""check-layers.py - the library's file dependency graph, checked for circles and layer breaches.

Usage: scripts/check-layers.py BUILD_DIR [BUILD_DIR ...]   (e.g. build, build-win)

The graph is drawn from the code itself, in one build of the library per BUILD_DIR:
  - includes: a file uses each header it names with #include "..." (resolved as the compiler
    does: the including file's folder, then the library's include folders);
  - calls: a .c file uses another when its object refers to a symbol (function or variable) the
    other's object defines: `nm` lists each object's undefined (U) and defined symbols, which is
    exact, static functions and inlined helpers included as they are compiled.
Library files are those under include/, base/, platform/ and memdiff/ (memdiff/cli/, a program
of its own, is not library). The objects come from BUILD_DIR/CMakeFiles/memdiff_objects.dir, so a Linux build
checks the Linux backend and a mingw-w64 build the Windows one.

It fails (exit status 1) on
  - a circle: files that use each other, directly or through others (a strongly connected
    component of more than one file);
  - a layer breach: a file using a file of a layer above its own (LAYERS below), a backend
    including another backend's files, or the core including a backend's private headers.
"""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The layers, lowest first; a file may use files of its own layer and of the layers below.
#   public:   the installed headers, include/ (types and statuses everyone shares)
#   os:       the OS services below everything of memdiff's (memory, clocks, thread identity):
#             platform/os.h, implemented by platform/<os>/os.c, which includes nothing else
#   base:     base/ - arena, errors, escaping, bit helpers, attribute macros; core and backends
#             both use it, and it knows no OS policy (its memory comes from the os layer)
#   platform: the backend contract platform/platform.h and the backends platform/<os>/
#   core:     memdiff/ - snapshots, storage, compare, reports; reaches the OS only through the
#             contract
LAYERS = ["public", "os", "base", "platform", "core"]
PUBLIC_HEADERS = {"include/memdiff.h", "include/memdiff_check.h", "include/memdiff1999.h"}
OS_FILES = {"platform/os.h", "platform/linux/os.c", "platform/windows/os.c"}

# Where #include "x" is looked up after the including file's folder (CMakeLists.txt).
INCLUDE_DIRS = ["", "include", "memdiff", "platform"]


def layer_of(path):
    if path in PUBLIC_HEADERS:
        return "public"
    if path in OS_FILES:
        return "os"
    if path.startswith("base/"):
        return "base"
    if path.startswith("platform/"):
        return "platform"
    if path.startswith("memdiff/"):
        return "core"
    return None


def backend_of(path):
    """platform/<os>/... -> <os>; None for the contract and other layers."""
    parts = path.split("/")
    return parts[1] if parts[0] == "platform" and len(parts) > 2 else None


INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def resolve(name, src, backend_dir):
    here = os.path.dirname(src)
    for d in [here] + [os.path.join(ROOT, d) for d in INCLUDE_DIRS] + [backend_dir]:
        if d is None:
            continue
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return os.path.relpath(p, ROOT)
    return None


def symbols(nm, obj):
    out = subprocess.run([nm, obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            undefined.add(f[1])
        elif len(f) == 3 and f[1] not in "Uabdnrstuvw?N-":  # global definitions only
            defined.add(f[2])
    return defined, undefined


def cmake_cache(build, key):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    return None


def graph_of(build):
    """edges[a][b] = set of reasons a uses b, for one build's library files."""
    objdir = os.path.join(build, "CMakeFiles", "memdiff_objects.dir")
    if not os.path.isdir(objdir):
        sys.exit(f"check-layers: {objdir} is missing: build the library first")
    nm = cmake_cache(build, "CMAKE_NM") or "nm"
    sources = {}
    for d, _, files in os.walk(objdir):
        for f in files:
            if f.endswith(".c.o") or f.endswith(".c.obj"):
                obj = os.path.join(d, f)
                src = os.path.relpath(obj, objdir)[: -len(".o" if f.endswith(".o") else ".obj")]
                if os.path.isfile(os.path.join(ROOT, src)):  # else left from a moved source
                    sources[src] = obj
    if not sources:
        sys.exit(f"check-layers: no objects in {objdir}")
    backend_dirs = {backend_of(s) for s in sources} - {None, "posix"}
    backend_dir = (os.path.join(ROOT, "platform", backend_dirs.pop())
                   if len(backend_dirs) == 1 else None)
    edges = collections.defaultdict(lambda: collections.defaultdict(set))

    todo, seen = list(sources), set()
    while todo:
        src = todo.pop()
        if src in seen:
            continue
        seen.add(src)
        with open(os.path.join(ROOT, src), encoding="utf-8") as f:
            text = f.read()
        for name in INCLUDE_RE.findall(text):
            dep = resolve(name, os.path.join(ROOT, src), backend_dir)
            if dep is None or layer_of(dep) is None:
                continue  # not a library file (a generated or third-party header)
            edges[src][dep].add("#include")
            todo.append(dep)

    definer = {}
    refs = {}
    for src, obj in sources.items():
        defined, undefined = symbols(nm, obj)
        refs[src] = undefined
        for s in defined:
            definer[s] = src
    for src, undefined in refs.items():
        for s in undefined:
            dep = definer.get(s)
            if dep and dep != src:
                edges[src][dep].add(s)
    return edges


def circles(edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    nodes = set(edges) | {b for a in edges for b in edges[a]}
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def breaches(edges):
    out = []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            la, lb = layer_of(a), layer_of(b)
            why = None
            if LAYERS.index(lb) > LAYERS.index(la):
                why = f"{la} layer uses the {lb} layer"
            elif (la == lb == "platform" and backend_of(a) and backend_of(b)
                  and backend_of(b) not in (backend_of(a), "posix")):
                why = "one backend uses another"
            elif la == "core" and backend_of(b) and "#include" in edges[a][b]:
                why = "the core includes a backend's private header"
            if why:
                out.append(f"{a} -> {b}: {why} ({', '.join(sorted(edges[a][b])[:4])})")
    return out


def main(builds):
    failed = False
    for build in builds:
        edges = graph_of(build)
        nfiles = len(set(edges) | {b for a in edges for b in edges[a]})
        nedges = sum(len(v) for v in edges.values())
        print(f"check-layers: {build}: {nfiles} files, {nedges} uses")
        for comp in circles(edges):
            print("  circle:")
            for a in sorted(comp):
                for b in sorted(edges[a]):
                    if b in comp:
                        print(f"    {a} -> {b} ({', '.join(sorted(edges[a][b])[:4])})")
            failed = True
        for line in breaches(edges):
            print(f"  layer breach: {line}")
            failed = True
    if failed:
        print("check-layers: FAILED (layers: scripts/check-layers.py, README.md \"Layout\")")
        return 1
    print("check-layers: no circle, no layer breach")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
