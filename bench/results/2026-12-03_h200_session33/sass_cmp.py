import sys, importlib.util
spec = importlib.util.spec_from_file_location("ss", "/work/main/bench/results/2026-12-03_h200_session30/sass_same.py")
ss = importlib.util.module_from_spec(spec); sys.argv=["/work/main/bench/results/2026-12-03_h200_session30/sass_same.py"]; spec.loader.exec_module(ss)
old = ss.load("/tmp/lib_1ef2297.so"); new = ss.load("/work/main/build/lib/libfusedmoe.so")
same=diff=0; newonly=[]
for n,body in new.items():
    if n in old:
        if old[n]==body: same+=1
        else: diff+=1; print("DIFF", n)
    else: newonly.append(n)
print(f"same {same}, differ {diff}, new-only {len(newonly)}")
