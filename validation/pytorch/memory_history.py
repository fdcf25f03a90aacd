#!/usr/bin/env python3
# The steady-state peak of validation/pytorch/ddp_reference.py's loop (reset after 5 warm-up iterations,
# then 25 more) for several configurations in one process, in order; mode "nosync" runs the loop without
# host synchronisation (as ddp_reference.py), "sync" synchronises after each step. Shows that the same
# configuration can peak one FP32 parameter copy higher depending on what ran before it.
# usage: python3 validation/pytorch/memory_history.py alexnet:16:fp32:nosync alexnet:16:fp32:sync ...
# Output of the run on 2026-11-26 (1 x H100, torch 2.11.0+cu130): validation/data/h100-sxm/memory_phases.txt
import os,sys,gc
os.environ["MASTER_ADDR"]="127.0.0.1";os.environ["MASTER_PORT"]="29532"
import torch,torchvision,torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
torch.backends.cudnn.benchmark=True
dist.init_process_group("nccl",rank=0,world_size=1,device_id=torch.device("cuda",0))
d=torch.device("cuda",0)
for s in sys.argv[1:]:
 nm,b,pr,mode=s.split(":");b=int(b);bf=pr=="bf16"
 m=getattr(torchvision.models,nm)(num_classes=1000).to(d);q=DDP(m,device_ids=[0])
 o=torch.optim.SGD(q.parameters(),lr=.01,momentum=.9,weight_decay=1e-4);c=torch.nn.CrossEntropyLoss()
 xs=[torch.randn(b,3,224,224,device=d) for _ in range(4)];ys=[torch.randint(0,1000,(b,),device=d) for _ in range(4)]
 pk=[]
 for it in range(30):
  if it==5:torch.cuda.synchronize();torch.cuda.reset_peak_memory_stats()
  o.zero_grad(set_to_none=True)
  with torch.autocast("cuda",dtype=torch.bfloat16,enabled=bf):
   y=q(xs[it%4]);l=c(y,ys[it%4])
  l.backward();o.step()
  if mode=="sync":torch.cuda.synchronize()
  if it>=5:pk.append(round(torch.cuda.max_memory_allocated()/1e6,1))
 torch.cuda.synchronize();print(s,"peak",torch.cuda.max_memory_allocated()/1e6,"first iters",pk[:3],"last",pk[-1],flush=True)
 del q,m,o,xs,ys,y,l;gc.collect();torch.cuda.empty_cache()
