# Independent re-implementation of cronshard-coordinator's assignment (FNV-1a 64 + splitmix64
# rendezvous with bounded load), used to pin the golden values in src/assign.rs.
M=(1<<64)-1
def fnv(data):
    h=0xcbf29ce484222325
    for b in data:
        h^=b; h=(h*0x100000001b3)&M
    return h
def score(m,b):
    z=fnv(m.encode()+b'\0'+b.to_bytes(4,'little'))
    z=((z^(z>>30))*0xbf58476d1ce4e5b9)&M
    z=((z^(z>>27))*0x94d049bb133111eb)&M
    return z^(z>>31)
def assign(members,B):
    members=sorted(set(members)); cap=-(-B//len(members))
    pairs=sorted(((score(m,b),i,b) for i,m in enumerate(members) for b in range(B)), key=lambda p:(-p[0],p[1],p[2]))
    owner=[None]*B; load=[0]*len(members)
    for s,i,b in pairs:
        if owner[b] is None and load[i]<cap: owner[b]=i; load[i]+=1
    return [members[o] for o in owner]
print(hex(score("replica-a",0)))
print(assign(["replica-a","replica-b","replica-c"],8))
print(assign(["replica-a","replica-b","replica-c"],64))
