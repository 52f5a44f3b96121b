#!/usr/bin/env python3
"""Checks every relative link and anchor in README.md and docs/*.md."""
import os, re, sys, glob
root = sys.argv[1] if len(sys.argv) > 1 else '.'
os.chdir(root)
files = ['README.md'] + sorted(glob.glob('docs/*.md'))

def slug(h):
    h = re.sub(r'`', '', h).strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')

def anchors(path):
    out, seen = set(), {}
    fence = False
    for ln in open(path, encoding='utf-8'):
        if ln.startswith('```'):
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', ln)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f'{s}-{n}')
    return out

bad = 0; total = 0
cache = {}
for f in files:
    text = open(f, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    for m in re.finditer(r'\]\(([^)\s]+)\)', text):
        target = m.group(1)
        if re.match(r'^[a-z]+:', target):
            continue
        total += 1
        path, _, frag = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(dest):
            print(f'{f}: {target}: no such file {dest}'); bad += 1; continue
        if frag:
            if dest not in cache:
                cache[dest] = anchors(dest)
            if frag not in cache[dest]:
                print(f'{f}: {target}: no heading #{frag} in {dest}'); bad += 1
print(f'{total} relative links in {len(files)} files, {bad} broken')
sys.exit(1 if bad else 0)
