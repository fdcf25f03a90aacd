#!/usr/bin/env python3
# Where the steady-state peak of validation/pytorch/ddp_reference.py's loop lies (for the memory model).
# Same loop as ddp_reference.py (DDP at world size 1, SGD momentum 0.9 + weight decay, cudnn.benchmark,
# 4 input batches on the GPU, zero_grad(set_to_none=True)); on iteration 6 it records allocated memory
# (MB) and the peak of each phase: st = iteration start, zg = after zero_grad, af/pf = after / peak of
# forward+loss, ab/pb = after / peak of backward, as/ps = after / peak of optimizer step; w = the model's
# weights, ddp = what DDP(...) allocated (net of what an earlier configuration's DDP released then).
# After each configuration it deletes everything, runs gc.collect() and prints what stays allocated.
# usage: python3 validation/pytorch/memory_phases.py alexnet:16:fp32 vgg16:64:bf16 ...
# Output of the run on 2026-11-26 (1 x H100 80GB HBM3, torch 2.11.0+cu130, torchvision 0.26.0):
# validation/data/h100-sxm/memory_phases.txt
import os,sys,json,gc
os.environ["MASTER_ADDR"]="127.0.0.1";os.environ["MASTER_PORT"]="29531"
import torch,torchvision,torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
torch.backends.cudnn.benchmark=True
dist.init_process_group("nccl",rank=0,world_size=1,device_id=torch.device("cuda",0))
d=torch.device("cuda",0);A=lambda:torch.cuda.memory_allocated()/1e6;P=lambda:torch.cuda.max_memory_allocated()/1e6
S=torch.cuda.synchronize;R=torch.cuda.reset_peak_memory_stats
for s in sys.argv[1:]:
 nm,b,pr=s.split(":");b=int(b);bf=pr=="bf16";S();b0=A()
 m=getattr(torchvision.models,nm)(num_classes=1000).to(d);r={"run":s,"w":A()-b0};a0=A()
 q=DDP(m,device_ids=[0]);S();r["ddp"]=A()-a0
 o=torch.optim.SGD(q.parameters(),lr=.01,momentum=.9,weight_decay=1e-4);c=torch.nn.CrossEntropyLoss()
 xs=[torch.randn(b,3,224,224,device=d) for _ in range(4)];ys=[torch.randint(0,1000,(b,),device=d) for _ in range(4)]
 for it in range(8):
  k=it==6
  if k:S();R();r["st"]=A()
  o.zero_grad(set_to_none=True)
  if k:r["zg"]=A()
  with torch.autocast("cuda",dtype=torch.bfloat16,enabled=bf):
   y=q(xs[it%4]);l=c(y,ys[it%4])
  if k:S();r["af"]=A();r["pf"]=P();R()
  l.backward()
  if k:S();r["ab"]=A();r["pb"]=P();R()
  o.step()
  if k:S();r["as"]=A();r["ps"]=P()
 print(json.dumps({k:(round(v,1) if isinstance(v,float) else v) for k,v in r.items()}),flush=True)
 del q,m,o,xs,ys,y,l;gc.collect();torch.cuda.empty_cache();print("left",A(),flush=True)
