#!/usr/bin/env python3
"""Every JSON document memdiff writes, validated against docs/schema/memdiff.schema.json.

The documents come from the real memdiff binary and the library measuring a real process (one
this script starts: memdiff_json_target, which maps files with hostile names): snap --json,
show --json (blocks and regions, and of a snapshot with PSS per mapping), diff --json (plain,
--verbose, --no-header, PSS per mapping), watch --json (3 ticks, and one with --pss), wss --json
(2 samples), the summaries run --json and record --json print on stderr (of a python3 command
that exits with status 3; record's timeline under a hostile name), a reference-set bracket's
diff and a snapshot written by the library itself, system --json, show --json and diff --json of
system files, and the golden files of tests/fixtures/reports. Each one must

- validate against the schema (JSON Schema draft 2020-12, python3-jsonschema),
- come out of `jq -c .` with every value unchanged (parsed again, compared with types),
- and the hostile file names must come back byte for byte from "path" / "path_hex".

Needs python3-jsonschema and jq (scripts/install-deps.sh installs both).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

# Names a file may have: newline, quote, backslash, ESC, and bytes that are not UTF-8 (a lone
# 0xff, a cut sequence); one plain valid UTF-8 name as a control.
HOSTILE = [
    b'we\nird.bin',
    b'q"uote\\back\x1b[31mesc.bin',
    b'inv\xff\xfeal\xc3id.bin',
    'caf\u00e9.bin'.encode(),
]

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg, file=sys.stderr)


def same(a, b):
    """Equal values of equal JSON types: 1 and 1.0 or True and 1 differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def documents(text):
    """The JSON documents of text, one after the other (pretty or JSON Lines)."""
    dec = json.JSONDecoder()
    i, out = 0, []
    while True:
        while i < len(text) and text[i] in ' \t\r\n':
            i += 1
        if i == len(text):
            return out
        doc, i = dec.raw_decode(text, i)
        out.append(doc)


class Checker:
    def __init__(self, schema_path):
        with open(schema_path, encoding='utf-8') as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        self.validator = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        self.count = 0

    def check(self, what, text, kind, n=None):
        """Validates the documents of text (all of kind; n of them if given); returns them."""
        try:
            docs = documents(text)
        except ValueError as e:
            fail(f'{what}: not JSON: {e}')
            return []
        if n is not None and len(docs) != n:
            fail(f'{what}: {len(docs)} documents, want {n}')
        for k, doc in enumerate(docs):
            name = f'{what} #{k + 1}'
            errors = sorted(self.validator.iter_errors(doc), key=lambda e: list(e.path))
            for e in errors[:5]:
                fail(f'{name}: {"/".join(map(str, e.absolute_path))}: {e.message[:300]}')
            if kind is not None and doc.get('kind') != kind:
                fail(f'{name}: kind {doc.get("kind")!r}, want {kind!r}')
            # What jq makes of it, read again: every value and type the same.
            jq = subprocess.run(['jq', '-c', '.'], input=json.dumps(doc, ensure_ascii=False),
                                capture_output=True, text=True, encoding='utf-8')
            if jq.returncode != 0:
                fail(f'{name}: jq failed: {jq.stderr}')
            elif not same(json.loads(jq.stdout), doc):
                fail(f'{name}: jq -c . changed a value')
            self.count += 1
        # Each line of JSON Lines output is a document of its own.
        if n is not None and n > 1 and len(text.rstrip('\n').split('\n')) != n:
            fail(f'{what}: {n} documents, not on {n} lines')
        return docs


def exact(obj, key):
    """The exact bytes of a string field: <key>_hex when present, else the string's UTF-8."""
    if key + '_hex' in obj:
        return bytes.fromhex(obj[key + '_hex'])
    return obj[key].encode('utf-8')


def run(args, **kw):
    p = subprocess.run(args, capture_output=True, **kw)
    if p.returncode != 0:
        fail(f'{" ".join(map(str, args))}: exit {p.returncode}: {p.stderr[-2000:]!r}')
    return p.stdout.decode('utf-8')  # every JSON output must be valid UTF-8


def run_stderr(args, status):
    """stderr of args, which must exit with status (run passes on its command's)."""
    p = subprocess.run(args, capture_output=True)
    if p.returncode != status:
        fail(f'{" ".join(map(str, args))}: exit {p.returncode}, want {status}: '
             f'{p.stderr[-2000:]!r}')
    return p.stderr.decode('utf-8')


def check_recorder(c, cli, tmp):
    """run --json and record --json of a command that grows by 8 MiB and exits with 3."""
    cmd = [sys.executable, '-c', 'import sys; x = bytearray(8 << 20); sys.exit(3)']
    doc = c.check('run --json', run_stderr([cli, 'run', '--json', '--'] + cmd, 3), 'run', 1)
    if doc:
        d = doc[0]
        # The peak is one of the command's own snapshots, and it holds the 8 MiB.
        if (d['exit'] != {'how': 'status', 'code': 3} or d['peak'] is None or
                d['peak']['snapshot']['pid'] != d['pid'] or
                int(d['peak']['snapshot']['resident_bytes']) < 8 << 20):
            fail(f'run --json: not the command\'s exit and peak: {json.dumps(d)[:500]}')
    # The timeline's name is not UTF-8: "timeline" has U+FFFD, "timeline_hex" the bytes.
    out = os.path.join(tmp.encode(), HOSTILE[2].replace(b'.bin', b'.mdt'))
    p = subprocess.run([cli.encode(), b'record', b'--json', b'-o', out, b'--'] +
                       [x.encode() for x in cmd], capture_output=True)
    if p.returncode != 0:
        fail(f'record --json: exit {p.returncode}: {p.stderr[-2000:]!r}')
    doc = c.check('record --json', p.stderr.decode('utf-8'), 'record', 1)
    if doc:
        d = doc[0]
        if (exact(d, 'timeline') != out or d['exit'] != {'how': 'status', 'code': 3} or
                int(d['file_bytes']) != os.path.getsize(out) or int(d['snapshots']) < 1):
            fail(f'record --json: not the timeline written: {json.dumps(d)[:500]}')


def check_system(c, cli, tmp, pid):
    """memdiff system --json (whole, and selected without the physical table), show --json of a
    system file and diff --json of two: the target is listed with its figures, the selection
    holds exactly what it chose."""
    doc = c.check('system --json', run([cli, 'system', '--json']), 'system', 1)
    if doc:
        d = doc[0]
        mine = [p for p in d['processes'] if p['pid'] == pid]
        if len(mine) != 1 or mine[0]['state'] != 'read' or int(mine[0]['rss_bytes']) == 0:
            fail(f'system --json: the target {pid} is not listed with its figures')
        if len(d['processes']) != int(d['system']['processes']):
            fail('system --json: not every process listed')
    doc = c.check('system --json --top 2 --no-phys',
                  run([cli, 'system', '--json', '--no-phys', '--sort', 'rss', '--top', '2']),
                  'system', 1)
    if doc:
        d = doc[0]
        rss = [int(p['rss_bytes']) for p in d['processes']]
        if d['physical'] is not None or len(rss) != 2 or rss[0] < rss[1] or d['sort'] != 'rss':
            fail(f'system --json --top 2 --no-phys: {json.dumps(d)[:500]}')
    A, B = os.path.join(tmp, 'a.mdsys'), os.path.join(tmp, 'b.mdsys')
    run([cli, 'system', '-q', '-o', A])
    run([cli, 'system', '-q', '-o', B])
    c.check('show --json (system file)', run([cli, 'show', '--json', A]), 'system', 1)
    doc = c.check('diff --json (system files)', run([cli, 'diff', '--json', A, B]),
                  'system-diff', 1)
    if doc and any(p['change'] == 'same' for p in doc[0]['processes']):
        fail('diff --json (system files): unchanged processes listed')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cli', required=True)
    ap.add_argument('--target', required=True)
    ap.add_argument('--schema', required=True)
    ap.add_argument('--golden', required=True)
    a = ap.parse_args()
    c = Checker(a.schema)

    for name in sorted(os.listdir(a.golden)):
        if name.endswith('.json'):
            with open(os.path.join(a.golden, name), encoding='utf-8') as f:
                c.check(f'golden {name}', f.read(), 'diff', 1)

    tmp = tempfile.mkdtemp(prefix='memdiff-json-')
    files = os.path.join(tmp, 'files')
    os.mkdir(files)
    for name in HOSTILE:
        with open(os.path.join(files.encode(), name), 'wb') as f:
            f.write(b'x' * 4096)
    t = subprocess.Popen([a.target, 'serve', files], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    try:
        if t.stdout.readline() != b'ready\n':
            fail('the target did not start')
            return
        pid = str(t.pid)
        A, B = os.path.join(tmp, 'a.mds'), os.path.join(tmp, 'b.mds')
        cli = a.cli

        snap = c.check('snap --json', run([cli, 'snap', pid, '-o', A, '--json']), 'snapshot', 1)
        if snap and ('blocks' in snap[0] or snap[0]['snapshot']['pid'] != t.pid):
            fail('snap --json: blocks listed, or another pid')
        t.stdin.write(b'g')
        t.stdin.flush()
        t.stdout.readline()
        run([cli, 'snap', pid, '-o', B, '--depth', 'deep', '-q'])

        shown = c.check('show --json', run([cli, 'show', '--json', A]), 'snapshot', 1)
        c.check('show --json --regions', run([cli, 'show', '--json', '--regions', B]),
                'snapshot', 1)
        for opts in ([], ['--verbose'], ['--no-header']):
            c.check('diff --json ' + ' '.join(opts), run([cli, 'diff', '--json'] + opts + [A, B]),
                    'diff', 1)
        c.check('watch --json', run([cli, 'watch', pid, '--json', '-i', '100ms', '-n', '3']),
                'watch', 3)
        c.check('wss --json', run([cli, 'wss', pid, '--json', '-i', '100ms', '-n', '2']),
                'wss', 2)
        # PSS per mapping (snap --pss, standard depth): the snapshot's total, each mapping's
        # figure on its first region with pss_end, null for blocks and categories.
        C = os.path.join(tmp, 'c.mds')
        run([cli, 'snap', pid, '-o', C, '--pss', '-q'])
        for opts in ([], ['--regions']):
            doc = c.check('show --json (--pss) ' + ' '.join(opts),
                          run([cli, 'show', '--json'] + opts + [C]), 'snapshot', 1)
            if not doc:
                continue
            d = doc[0]
            items = d['regions' if opts else 'blocks']
            carried = sum(int(r['pss_bytes']) for r in items if 'pss_end' in r)
            if ('pss-mappings' not in d['snapshot']['sources'] or
                    d['snapshot']['pss_bytes'] in (None, 0) or
                    any(x['pss_bytes'] is not None for x in d['categories'].values()) or
                    (opts and carried != int(d['snapshot']['pss_bytes'])) or
                    (not opts and any(b['pss_bytes'] is not None for b in items))):
                fail('show --json (--pss): PSS per mapping not where it belongs')
        c.check('diff --json (--pss)', run([cli, 'diff', '--json', C, C]), 'diff', 1)
        c.check('watch --json --pss', run([cli, 'watch', pid, '--json', '--pss', '-i', '100ms',
                                            '-n', '1']), 'watch', 1)
        check_recorder(c, cli, tmp)
        check_system(c, cli, tmp, t.pid)
        docs = c.check('library documents', run([a.target, 'docs']), None)
        if ([d.get('kind') for d in docs] != ['diff', 'diff', 'snapshot'] or
                'bracket' not in docs[0] or not same(docs[0], docs[1]) or
                'regions' not in docs[2]):
            fail('library documents: want a bracket diff twice (pretty, one line) and a snapshot')

        # The hostile names, byte for byte: each file is one block, its label and path the
        # file's path.
        if shown:
            got = set()
            for b in shown[0]['blocks']:
                if b['category'] == 'mapped-file':
                    got.add(exact(b, 'path'))
                    if exact(b, 'label') != exact(b, 'path'):
                        fail(f'label {exact(b, "label")!r} is not path {exact(b, "path")!r}')
            for name in HOSTILE:
                want = os.path.join(files.encode(), name)
                if want not in got:
                    fail(f'show --json: no block with the exact path {want!r}; got '
                         f'{sorted(x for x in got if x.startswith(files.encode()))!r}')
    finally:
        if t.poll() is None:
            t.stdin.write(b'q')
            t.stdin.close()
            t.wait()
    print(f'{c.count} documents checked, {len(failures)} failures')
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
