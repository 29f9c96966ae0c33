import sys, importlib.util
spec = importlib.util.spec_from_file_location("ss", "/work/main/bench/results/2026-12-03_h200_session30/sass_same.py")
ss = importlib.util.module_from_spec(spec); sys.argv=["/work/main/bench/results/2026-12-03_h200_session30/sass_same.py"]; spec.loader.exec_module(ss)
old = ss.load("/tmp/lib_8c73dbc.so"); new = ss.load("/work/main/build/lib/libfusedmoe.so")
same=diff=0; newonly=[]
for n,body in new.items():
    o = n
    if "sm90_fp8_grouped_gemm_kernel" in n:
        # drop the last template bool (kDefer) before "EEv14CUtensorMap"
        i = n.rfind("EEv14CUtensorMap")
        tail = n[i-4:i+1]  # "Lb0EE" or "Lb1EE"
        if n[i-4:i] in ("Lb0E","Lb1E"):
            kdef = n[i-4:i]; o = n[:i-4] + n[i:]
            if kdef == "Lb1E": newonly.append(n); continue
    if o in old:
        if old[o]==body: same+=1
        else: diff+=1; print("DIFF", n)
    else: newonly.append(n)
print(f"same {same}, differ {diff}, new-only (the deferred kernels and others) {len(newonly)}")
for n in newonly: print("NEW", n)
