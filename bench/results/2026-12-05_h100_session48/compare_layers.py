#!/usr/bin/env python3
# Layer times of two sets of `fusedmoe bench --suite layer` outputs (A and B: comma-separated files,
# averaged per case and token count); prints B/A per point and the geometric mean.
# python3 compare_layers.py a1.txt,a2.txt b1.txt,b2.txt
import re,sys,math
def load(p):
    d={}
    for l in open(p):
        if ' layer ' in l and 'packed off' not in l and 'bound' not in l:
            c=l.split()[0]
            m=re.search(r'\s(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)%',l)
            if m: d[(c,int(m.group(1)))]=(float(m.group(2)),float(m.group(3)),float(m.group(4)))
    return d
A=[load(p) for p in sys.argv[1].split(',')]; B=[load(p) for p in sys.argv[2].split(',')]
g=[]
for k in A[0]:
    a=sum(x[k][0] for x in A)/len(A); b=sum(x[k][0] for x in B)/len(B)
    g.append(b/a)
    print(f"{k[0]:18s}{k[1]:5d} A {' '.join('%8.2f'%x[k][0] for x in A)}  B {' '.join('%8.2f'%x[k][0] for x in B)}  B/A {b/a:.4f}  %floor A {A[0][k][2]:.1f}")
print('geomean B/A', math.exp(sum(map(math.log,g))/len(g)))
