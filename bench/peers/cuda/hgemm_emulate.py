"""Emulates the shared-memory pipeline of hgemm_mma lane by lane, without a GPU.

suite::hgemm_mma (bench/peers/cuda/suite.cuh, = hgemm_tile<128, 256, 32, 4>), the dialect's
bench/kernels/hgemm_mma.py (the same offsets in elements) and the shapes of
variants::hgemm_tile (hgemm_variants.cuh) place 16-byte cp.async pieces in XOR-swizzled
shared rows and read mma fragments back with ldmatrix.x4; an index slip there gives wrong
results only on the GPU. This replays the kernel's index arithmetic on a byte array:
cp.async copies (applied when their group is waited for, or at once with `issue`), ldmatrix
(matrix i from the addresses of lanes 8i..8i+7; element (g, 2t) or, transposed, (2t, g)), the
m16n8k16 fragment layouts of the PTX ISA, the grouped block order and the epilogue, and
compares c with a @ b. It also counts bank conflicts: 8 accesses of 16 bytes (a phase of an
ldmatrix, or 8 threads' cp.async stores) that do not cover the 8 16-byte bank groups.

usage: python3 hgemm_emulate.py BM BN BK STAGES m n k wait|issue
  e.g. python3 hgemm_emulate.py 128 256 32 4 256 512 320 wait   (about a minute)
prints the largest error against float64 a @ b (~1e-6) and the conflicts (0).
"""
import numpy as np, sys
BM,BN,BK,S=map(int,sys.argv[1:5]); m,n,k=map(int,sys.argv[5:8]); mode=sys.argv[8]
GROUP=16; WN=BN//64; TH=(BM//64)*WN*32; SA=BM*BK*2; ST=SA+BK*BN*2
ACH=BK//8; BCH=BN//8; AP=BM*ACH//TH; BP=BK*BCH//TH; SUB=BK//16
def swz(row,c): return c^((row>>1)&3) if BK==32 else c^(row&7)
rng=np.random.default_rng(2)
A=(rng.random((m,k))*2-1).astype(np.float16); B=(rng.random((k,n))*2-1).astype(np.float16)
Af=A.reshape(-1); Bf=B.reshape(-1); C=np.full((m,n),np.nan,np.float32); conf=[0]
def banks(ad):
    if len(set((x//16)%8 for x in ad))!=8: conf[0]+=1
def ldsm(smem,addrs,trans):
    mats=[]
    for i in range(4):
        ad=addrs[8*i:8*i+8]; banks(ad)
        mats.append(np.stack([smem[x:x+16].view(np.float16) for x in ad]))
    out=np.zeros((32,4,2),np.float16)
    for lane in range(32):
        g,tq=lane//4,lane%4
        for i in range(4): out[lane,i]=mats[i][g,2*tq:2*tq+2] if not trans else mats[i][2*tq:2*tq+2,g]
    return out
def mma(acc,fa,b0,b1):
    Am=np.zeros((16,16)); Bm=np.zeros((16,8))
    for lane in range(32):
        g,t=lane//4,lane%4
        Am[g,2*t:2*t+2]=fa[lane][0]; Am[g+8,2*t:2*t+2]=fa[lane][1]; Am[g,2*t+8:2*t+10]=fa[lane][2]; Am[g+8,2*t+8:2*t+10]=fa[lane][3]
        Bm[2*t:2*t+2,g]=b0[lane]; Bm[2*t+8:2*t+10,g]=b1[lane]
    D=Am@Bm
    for lane in range(32):
        g,t=lane//4,lane%4
        acc[lane]+=[D[g,2*t],D[g,2*t+1],D[g+8,2*t],D[g+8,2*t+1]]
gn,gm=n//BN,m//BM
for bid in range(gn*gm):
    per=GROUP*gn; first=bid//per*GROUP; rows=min(gm-first,GROUP); inner=bid%per
    row0=(first+inner%rows)*BM; col0=inner//rows*BN
    smem=np.zeros(S*ST,np.uint8); acc=np.zeros((TH//32,32,4,8,4))
    pending=[[]]
    def load_tile(kt):
        st=(kt%S)*ST; per_ins=[[] for _ in range(AP+BP)]
        for t in range(TH):
            ar,ac,br,bc=t//ACH,t%ACH,t//BCH,t%BCH
            sa=ar*BK*2+swz(ar,ac)*16; sb=SA+br*BN*2+(bc^(br&7))*16
            ga=(row0+ar)*k+ac*8; gb=br*n+col0+bc*8; pa=ga+kt*BK; pb=gb+kt*BK*n
            for i in range(AP):
                c=(st+sa+i*(TH//ACH)*BK*2,Af,pa+i*(TH//ACH)*k); pending[-1].append(c); per_ins[i].append(c[0])
            for i in range(BP):
                c=(st+sb+i*(TH//BCH)*BN*2,Bf,pb+i*(TH//BCH)*n); pending[-1].append(c); per_ins[AP+i].append(c[0])
        for d in per_ins:
            for q in range(0,TH,8): banks(d[q:q+8])
    def apply(g):
        for d,src,e in g: smem[d:d+16]=src[e:e+8].view(np.uint8)
    def commit():
        if mode=="issue": apply(pending[-1]); pending[-1]=[]
        pending.append([])
    nk=k//BK
    for s in range(S-1):
        if s<nk: load_tile(s)
        commit()
    for kt in range(nk):
        done=pending[:-1]
        for gi in range(len(done)-(S-2)): apply(done[gi]); done[gi].clear()
        if kt+S-1<nk: load_tile(kt+S-1)
        commit()
        st=(kt%S)*ST
        for w in range(TH//32):
            wm,wn=w//WN*64,w%WN*64
            for s in range(SUB):
                fa=[ldsm(smem,[st+(wm+l%16)*BK*2+swz(l%16,2*s+l//16)*16+i*16*BK*2 for l in range(32)],False) for i in range(4)]
                fb=[ldsm(smem,[st+SA+(l%16)*BN*2+(wn//8+((2*j+l//16)^(l%16&7)))*16+s*16*BN*2 for l in range(32)],True) for j in range(4)]
                for i in range(4):
                    for j in range(8): mma(acc[w,:,i,j],fa[i],fb[j//2][:,j%2*2],fb[j//2][:,j%2*2+1])
    for w in range(TH//32):
        wm,wn=w//WN*64,w%WN*64
        for lane in range(32):
            g,q=lane//4,lane%4
            for i in range(4):
                for j in range(8):
                    r=row0+wm+i*16+g; col=col0+wn+j*8+2*q
                    C[r,col:col+2]=acc[w,lane,i,j,0:2]; C[r+8,col:col+2]=acc[w,lane,i,j,2:4]
ref=A.astype(np.float64)@B.astype(np.float64)
print(sys.argv[1:],"nan:",np.isnan(C).sum(),"maxerr:",np.nanmax(np.abs(C-ref)),"conflicts:",conf[0])
