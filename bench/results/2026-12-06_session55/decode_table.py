# Session 55: a decode table (case x tokens: us and % of floor) from one bench output (usage: python3 decode_table.py out.txt).
import re, sys
rows = {}; toks = set(); order = []
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)\s+layer (.*?)\s{2,}(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)%', line)
    if not m or '[' in m.group(2) or 'precomputed' in m.group(2): continue
    c, t = m.group(1), int(m.group(3))
    if c not in order: order.append(c)
    rows[(c, t)] = (float(m.group(4)), float(m.group(6))); toks.add(t)
toks = sorted(toks)
print('| case | ' + ' | '.join(f'{t}' for t in toks) + ' |')
print('|---|' + '---|' * len(toks))
for c in order:
    print(f'| {c} | ' + ' | '.join((f'{rows[(c,t)][0]:.2f} ({rows[(c,t)][1]:.1f} %)' if (c,t) in rows else '-') for t in toks) + ' |')
