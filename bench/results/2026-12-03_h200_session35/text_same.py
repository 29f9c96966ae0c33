# Compares the .text sections (machine code) of every kernel function in the cubins extracted
# (cuobjdump -xelf all) from two builds of libfusedmoe.so into old/ and new/: identical bytes =
# identical SASS. Session 35: the final build against 46c6d74 (call 6, 230/230 GPU tests).
import struct, sys, glob, os
def sections(path):
    d=open(path,'rb').read()
    shoff=struct.unpack_from('<Q',d,0x28)[0]; shentsize,shnum,shstrndx=struct.unpack_from('<HHH',d,0x3A)
    hdrs=[struct.unpack_from('<IIQQQQIIQQ',d,shoff+i*shentsize) for i in range(shnum)]
    stro=hdrs[shstrndx][4]
    out={}
    for h in hdrs:
        name=d[stro+h[0]:d.index(b'\0',stro+h[0])].decode()
        if name.startswith('.text.'):
            out[name]=d[h[4]:h[4]+h[5]]
    return out
tot=diff=0
for f in sorted(glob.glob('old/*.cubin')):
    a=sections(f); b=sections('new/'+os.path.basename(f))
    if set(a)!=set(b): print('function sets differ', f); diff+=1
    for k in a:
        tot+=1
        if a[k]!=b.get(k): diff+=1; print('differs', os.path.basename(f), k[:100])
print(f'{tot} functions compared, {diff} differ')
