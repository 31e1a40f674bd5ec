#!/usr/bin/env python3
"""veil vs restic vs rclone crypt on the same data, same disk, one run (issue 5's comparison).

Workloads:
  a  200 random 64 KiB files + 4 copies of one 64 MiB file, one user
  b  the same set stored by two users (veil: two users of one deployment; restic: two
     repositories; rclone crypt: two crypt remotes) -- restic dedups within one repository
     only, rclone crypt not at all
  c  real files: two users each holding this machine's /usr/share/doc and
     /usr/lib/python3/dist-packages plus 8 MiB of their own
  s  small files: 2,000 random 4 KiB files in 20 directories, one user (round trips, not CPU)

For each tool: wall time and CPU time (user + system, of the backup command only) of each
user's backup and the bytes it left on disk (du of the repository / remote / store data
directory). Prints a Markdown table and JSON lines
(--json FILE). Needs bin/veil (make build), restic and rclone (scripts/install-deps).

  python3 scripts/bench_compare.py [--workloads a,b,c] [--json out.jsonl]

A/B of two veil builds on the same data in one run (each round runs every build in turn):

  python3 scripts/bench_compare.py --tools veil --veil /tmp/veil-old --veil bin/veil --rounds 3 --workloads c

--again N runs each user's backup N more times on the unchanged data (the second put of an
unchanged tree; restic uses its parent snapshot, rclone compares size and mtime) and
reports those times too (again_seconds).
"""
import argparse, json, os, resource, shutil, socket, subprocess, sys, tempfile, time, urllib.request, ssl, base64

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VEIL = os.path.join(ROOT, "bin", "veil")
ENV = dict(os.environ)
ENV.pop("AWS_CA_BUNDLE", None)


CPU = []  # CPU seconds (user + system) of each command run() ran, in order


def run(cmd, env=None, **kw):
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, env={**ENV, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return time.perf_counter() - t, r.stdout


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def apparent(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def make_a(dst, seed):
    os.makedirs(dst)
    rnd = open("/dev/urandom", "rb")
    for i in range(200):
        with open(os.path.join(dst, f"small-{i:03d}.bin"), "wb") as f:
            f.write(rnd.read(64 << 10))
    big = rnd.read(64 << 20)
    for i in range(4):
        with open(os.path.join(dst, f"big-copy-{i}.bin"), "wb") as f:
            f.write(big)


def make_s(dst):
    rnd = open("/dev/urandom", "rb")
    for i in range(2000):
        d = os.path.join(dst, f"d{i % 20:02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:04d}"), "wb") as f:
            f.write(rnd.read(4096))


def make_c(dst, user):
    os.makedirs(dst)
    for src in ("/usr/share/doc", "/usr/lib/python3/dist-packages"):
        subprocess.run(["cp", "-a", src, os.path.join(dst, os.path.basename(src))], check=False,
                       stderr=subprocess.DEVNULL)
    with open(os.path.join(dst, f"own-{user}.bin"), "wb") as f:
        f.write(os.urandom(8 << 20))


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Veil:
    name = "veil"
    binary = VEIL

    def __init__(self, work):
        self.work = work
        self.server = os.path.join(work, "server")
        p1, p2, p3, p4, p5 = free_ports(5)
        self.store_addr = f"127.0.0.1:{p3}"
        self.proc = subprocess.Popen([self.binary, "serve", "--dir", self.server, "--user", "u1", "--user", "u2",
                                      "--ks-listen", f"127.0.0.1:{p1}", "--ks-udp", f"127.0.0.1:{p2}",
                                      "--store-listen", self.store_addr,
                                      "--peekaboo-k-listen", f"127.0.0.1:{p4}", "--peekaboo-v-listen", f"127.0.0.1:{p5}"],
                                     stderr=subprocess.PIPE, text=True)
        self.proc.stderr.readline(); self.proc.stderr.readline(); self.proc.stderr.readline()
        for u in ("u1", "u2"):
            pw = os.path.join(work, u + ".pass")
            open(pw, "w").write("passphrase " + u)
            run([self.binary, "init", "--invite", os.path.join(self.server, "invites", u + ".invite")], self.env(u))

    def env(self, u):
        return {"VEIL_CONFIG": os.path.join(self.work, u), "VEIL_PASSWORD_FILE": os.path.join(self.work, u + ".pass")}

    def backup(self, user, src):
        return run([self.binary, "put", "-q", src, "--to", "data"], self.env(user))[0]

    def stats(self):
        cred = json.load(open(os.path.join(self.server, "store", "admin.cred")))
        ctx = ssl.create_default_context(cadata=cred["ca"])
        auth = base64.b64encode(f"{cred['user']}:{cred['secret']}".encode()).decode()
        req = urllib.request.Request(f"https://{self.store_addr}/v1/stats", headers={"Authorization": "Basic " + auth})
        return json.load(urllib.request.urlopen(req, context=ctx))

    def stored(self):
        return du(os.path.join(self.server, "store"))

    def server_cpu(self):
        """CPU seconds (user + system) the veil serve process has used so far."""
        f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def server_written(self):
        """Bytes the veil serve process has caused to be written to disk so far (its
        write_bytes in /proc/PID/io: data files, database pages; not the journal)."""
        for line in open(f"/proc/{self.proc.pid}/io"):
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
        return 0

    def close(self):
        self.proc.terminate()
        self.proc.wait()


class Restic:
    name = "restic"

    def __init__(self, work):
        self.work = work
        for u in ("u1", "u2"):
            run(["restic", "init", "--repository-version", "2"], self.env(u))

    def env(self, u):
        return {"RESTIC_REPOSITORY": os.path.join(self.work, "repo-" + u), "RESTIC_PASSWORD": "passphrase " + u,
                "RESTIC_CACHE_DIR": os.path.join(self.work, "cache-" + u)}

    def backup(self, user, src):
        return run(["restic", "backup", "-q", src], self.env(user))[0]

    def stored(self):
        return sum(du(os.path.join(self.work, "repo-" + u)) for u in ("u1", "u2"))

    def close(self):
        pass


class RcloneCrypt:
    name = "rclone crypt"

    def __init__(self, work):
        self.work = work
        self.obscured = {u: run(["rclone", "obscure", "passphrase " + u])[1].strip() for u in ("u1", "u2")}

    def backup(self, user, src):
        env = {"RCLONE_CONFIG_C_TYPE": "crypt", "RCLONE_CONFIG_C_REMOTE": os.path.join(self.work, "remote-" + user),
               "RCLONE_CONFIG_C_PASSWORD": self.obscured[user], "RCLONE_CONFIG": "/dev/null"}
        return run(["rclone", "copy", "--transfers", "4", "--links", src, "C:data"], env)[0]

    def stored(self):
        return sum(du(os.path.join(self.work, "remote-" + u)) for u in ("u1", "u2") if os.path.isdir(os.path.join(self.work, "remote-" + u)))

    def close(self):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="a,b,c")
    ap.add_argument("--json", help="also write JSON lines here")
    ap.add_argument("--dir", help="scratch directory (default: a temp dir on /tmp's disk)")
    ap.add_argument("--tools", default="veil,restic,rclone", help="which tools to run")
    ap.add_argument("--veil", action="append", help="veil binary (repeat to compare builds; default bin/veil)")
    ap.add_argument("--rounds", type=int, default=1, help="run every tool this many times, in turn")
    ap.add_argument("--again", type=int, default=0, help="then back up the unchanged data this many more times per user")
    args = ap.parse_args()
    tools = []
    for name in args.tools.split(","):
        if name == "veil":
            for b in args.veil or [VEIL]:
                if not os.path.exists(b):
                    sys.exit(f"{b}: build veil first: make build")
                label = "veil" if not args.veil or len(args.veil) == 1 else f"veil ({b})"
                tools.append(type("Veil", (Veil,), {"binary": b, "name": label}))
        else:
            tools.append({"restic": Restic, "rclone": RcloneCrypt}[name])
    base = tempfile.mkdtemp(prefix="veil-compare-", dir=args.dir)
    rows = []
    try:
        data = os.path.join(base, "data")
        os.makedirs(data)
        for wl in args.workloads.split(","):
            if wl == "s":
                src = {"u1": os.path.join(data, "s")}
                if not os.path.exists(src["u1"]):
                    make_s(src["u1"])
                users = ["u1"]
            elif wl in ("a", "b"):
                src = {"u1": os.path.join(data, "a")}
                if not os.path.exists(src["u1"]):
                    make_a(src["u1"], 1)
                src["u2"] = src["u1"]
                users = ["u1"] if wl == "a" else ["u1", "u2"]
            else:
                src = {u: os.path.join(data, "c-" + u) for u in ("u1", "u2")}
                for u in src:
                    if not os.path.exists(src[u]):
                        make_c(src[u], u)
                users = ["u1", "u2"]
            logical = sum(apparent(src[u]) for u in users)
            for rnd, tool in [(r, t) for r in range(args.rounds) for t in tools]:
                subprocess.run(["sync"])
                work = os.path.join(base, f"{wl}-{rnd}-{tool.name.replace(' ', '-').replace('/', '_')}")
                os.makedirs(work)
                t = tool(work)
                try:
                    times, cpu, scpu = [], [], []
                    w0 = t.server_written() if hasattr(t, "server_written") else 0
                    for u in users:
                        s0 = t.server_cpu() if hasattr(t, "server_cpu") else 0
                        times.append(t.backup(u, src[u]))
                        cpu.append(CPU[-1])  # the backup command's own CPU (not the servers')
                        if hasattr(t, "server_cpu"):
                            scpu.append(round(t.server_cpu() - s0, 2))
                    written = t.server_written() - w0 if hasattr(t, "server_written") else None
                    again = [round(t.backup(u, src[u]), 2) for u in users for _ in range(args.again)]
                    subprocess.run(["sync"])
                    row = {"workload": wl, "tool": tool.name, "users": len(users), "logical_bytes": logical,
                           "seconds": [round(x, 2) for x in times], "total_seconds": round(sum(times), 2),
                           "cpu_seconds": [round(x, 2) for x in cpu],
                           "stored_bytes": t.stored()}
                    if again:
                        row["again_seconds"] = again
                    if scpu:
                        row["server_cpu_seconds"] = scpu
                    if written is not None:
                        row["server_written_bytes"] = written  # by the first puts of every user
                    if issubclass(tool, Veil):
                        st = t.stats()
                        row["store_physical_bytes"] = st["physical_bytes"]
                        row["store_logical_bytes"] = st["logical_bytes"]
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr)
                finally:
                    t.close()
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("| workload | tool | users | data (MiB) | time (s) per user | client CPU (s) per user | stored on disk (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} | {r['tool']} | {r['users']} | {r['logical_bytes']/2**20:.1f} | "
              f"{' + '.join(str(s) for s in r['seconds'])} | {' + '.join(str(s) for s in r['cpu_seconds'])} | "
              f"{r['stored_bytes']/2**20:.1f} |" + (f" again: {r['again_seconds']}" if "again_seconds" in r else ""))
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
