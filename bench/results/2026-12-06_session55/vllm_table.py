# Session 55: the vLLM comparison table from bench outputs (usage: python3 vllm_table.py a.txt,b.txt [peer-figures.md]); later files override earlier rows.
import re, sys, glob
# vLLM's H200 figures (shared/peer-figures.md): (case, tokens) -> us
vl = {}
cur = None
names = {'dsv3-tp8':'dsv3-tp8-fp8b','dsv3-ep8':'dsv3-ep8-fp8b','dsv4f-tp4':'dsv4f-tp4-fp8b','qwen235-tp4':'qwen235-tp4-fp8b'}
for line in open('/work/shared/peer-figures.md' if len(sys.argv) < 3 else sys.argv[2]):
    m = re.match(r'\| (\S+)?.*?\| (.*?) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|', line)
    if not line.startswith('|') or '---' in line or 'case' in line: continue
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) < 6: continue
    if cells[0]:
        base = cells[0].split()[0]; w = cells[1]
        if base == 'qwen235-tp8' and 'fp8' in w: cur = 'qwen235-tp8-fp8c'
        elif base in names and 'fp8' in w: cur = names[base]
        else: cur = base
    vl[(cur, int(cells[2]))] = float(cells[3])
rows = {}
for f in [x for x in sys.argv[1].split(',') if x]:
    for line in open(f):
        m = re.match(r'(\S+)\s+layer (.*?)\s{2,}(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)%', line)
        if not m or 'packed off' in line: continue
        case, lab, t, us = m.group(1), m.group(2), int(m.group(3)), float(m.group(4))
        k = 'pre' if 'precomputed' in lab else 'rt'
        rows.setdefault((case, t), {})[k] = (us, float(m.group(6)))
print('| case | tokens | ours, router (µs, % floor) | ours, precomputed ids | vLLM H200 (µs) | vLLM / ours (precomputed) |')
print('|---|---|---|---|---|---|')
for (case, t), v in sorted(vl.items(), key=lambda x: (x[0][0], x[0][1])):
    o = rows.get((case, t))
    if not o: print(f'| {case} | {t} | - | - | {v} | - |'); continue
    rt = o.get('rt'); pre = o.get('pre')
    print(f'| {case} | {t} | {rt[0]:.2f} ({rt[1]:.1f} %) | {pre[0]:.2f} ({pre[1]:.1f} %) | {v} | {v/pre[0]:.2f} |')
