import torch, time, statistics
torch.manual_seed(0)
x=torch.randn(1024,128); lin=torch.nn.Linear(128,256)
xs=torch.randn(16,16384)
def lvl2(): 
    y=lin(x); y=y/2.0; y=torch.sigmoid(y); y=y*1.5; return torch.sum(y,dim=1,keepdim=True)
def lvl1(): return xs*torch.sigmoid(xs)
with torch.no_grad():
  for name,f in (("swish",lvl1),("gemm_chain",lvl2)):
    for _ in range(20): f()
    ts=[]
    for _ in range(300):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    ts.sort()
    print(name, "threads", torch.get_num_threads(), "median %.0f us mean %.0f us p90 %.0f us"%(ts[150]*1e6, statistics.mean(ts)*1e6, ts[270]*1e6))
