package archtest

// A pattern names one package ("internal/mle") or a package and everything below it
// ("internal/oblivisync/..."). Paths are relative to the module unless they start with a
// host name (third-party modules, e.g. "github.com/hanwen/go-fuse/...").

// Rule: the packages matching Pkg must not depend, directly or transitively, on any
// package matching one of Banned.
type Rule struct {
	Pkg    string
	Banned []string
}

// Groups of packages the rules are written with. Imports point down the layers: cmd ->
// services and clients -> protocols and formats -> primitives.
var (
	cli       = []string{"cmd/..."}
	benches   = []string{"internal/bench/..."} // only cmd/veil runs the experiments
	testOnly  = []string{"internal/testutil/...", "internal/oblivisync/osynctest/...", "internal/storage/storagetest/...", "internal/storeserver/storetest", "internal/archtest/...", "internal/metal/twopc/twopctest"}
	servers   = []string{"internal/keyserver/...", "internal/storeserver/...", "internal/allinone/..."}
	clients   = []string{"internal/dupless/...", "internal/ksclient/...", "internal/profile/..."}
	osync     = []string{"internal/oblivisync/..."}
	peekaboo  = []string{"internal/peekaboo/..."}
	metal     = []string{"internal/metal/..."}
	protocols = []string{"internal/mle/...", "internal/oprf/...", "internal/kswire/...", "internal/storewire/...", "internal/storage/...", "internal/invite/..."}
	// top is what no library package may import: the CLI, the experiments, test helpers.
	top = join(cli, benches, testOnly)
	// otherSystems is what a system's packages must not import: DupLESS's and ObliviSync's
	// servers and clients (Peekaboo and Metal share only the foundations: server, pki,
	// atomicfile, sealedkey, storage).
	duplessAndOsync = join(servers, clients, osync, []string{"internal/mle/...", "internal/kswire/...", "internal/storewire/...", "internal/invite/..."})
)

func join(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// rules: every package of the module matches at least one (TestEveryPackageHasARule).
var rules = []Rule{
	// Foundations: no veil package above them.
	{"internal/atomicfile", []string{"internal/...", "cmd/..."}},
	{"internal/verr", []string{"internal/...", "cmd/..."}},        // errors every layer wraps
	{"internal/words", []string{"internal/...", "cmd/..."}},       // the wording of counts ("1 file") every user-facing line shares
	{"internal/backoff", []string{"internal/...", "cmd/..."}},     // the retry loop clients share
	{"internal/ratelog", []string{"internal/...", "cmd/..."}},     // one log line per interval for a repeated fault
	{"internal/failover", []string{"internal/...", "cmd/..."}},    // the endpoint rotation clients share
	{"internal/fuseunmount", []string{"internal/...", "cmd/..."}}, // ending a FUSE mount: both mounts share it
	{"internal/sealedkey", []string{"internal/...", "cmd/..."}},
	{"internal/server", []string{"internal/...", "cmd/..."}},
	{"internal/pki", join(top, servers, clients, osync, peekaboo, metal, protocols, []string{"internal/server", "internal/sealedkey"})},

	// Protocols and formats.
	{"internal/mle/...", join(top, servers, clients, osync, peekaboo, metal, []string{"internal/storage/...", "internal/oprf/...", "internal/kswire/...", "internal/storewire/...", "internal/invite/..."})},
	{"internal/oprf/...", []string{"internal/...", "cmd/..."}},
	{"internal/kswire/...", join(top, servers, clients, osync, peekaboo, metal, []string{"internal/mle/...", "internal/storage/...", "internal/storewire/...", "internal/invite/..."})},
	{"internal/storewire/...", join(top, servers, clients, osync, peekaboo, metal, []string{"internal/mle/...", "internal/oprf/...", "internal/kswire/...", "internal/invite/..."})},
	{"internal/storage/...", join(cli, benches, servers, clients, osync, peekaboo, metal, []string{"internal/mle/...", "internal/oprf/...", "internal/kswire/...", "internal/invite/...", "internal/testutil/..."})},
	{"internal/invite/...", join(top, servers, clients, osync, peekaboo, metal, []string{"internal/mle/...", "internal/oprf/...", "internal/storage/local/...", "internal/storage/s3/...", "internal/storage/remote/..."})},

	// Services.
	{"internal/keyserver/...", join(top, clients, osync, peekaboo, metal, []string{"internal/storeserver/...", "internal/allinone/...", "internal/storage/...", "internal/storewire/...", "internal/mle/..."})},
	{"internal/storeserver/...", join(top, clients, osync, peekaboo, metal, []string{"internal/keyserver/...", "internal/allinone/...", "internal/mle/...", "internal/oprf/...", "internal/kswire/..."})},
	{"internal/allinone/...", join(top, clients, osync, []string{"internal/mle/..."})}, // composes every system's servers

	// Clients.
	{"internal/ksclient/...", join(top, servers, osync, peekaboo, metal, []string{"internal/dupless/...", "internal/profile/...", "internal/invite/...", "internal/storage/...", "internal/storewire/..."})},
	{"internal/dupless/...", join(top, servers, osync, peekaboo, metal, []string{"internal/ksclient/...", "internal/profile/...", "internal/invite/...", "internal/oprf/...", "internal/kswire/..."})},
	{"internal/profile/...", join(top, servers, osync, peekaboo, metal)},

	// ObliviSync: the engine uses no FUSE and no other veil subsystem; the FUSE layer and
	// the test helpers no CLI or experiment.
	{"internal/oblivisync", join(top, servers, clients, peekaboo, metal, protocols, []string{"internal/oblivisync/...", "github.com/hanwen/go-fuse/..."})},
	{"internal/oblivisync/fusefs/...", join(top, servers, clients, peekaboo, metal, protocols)},
	{"internal/oblivisync/osynctest/...", join(cli, benches, servers, clients, peekaboo, metal)},

	// Peekaboo and Metal: built on the foundations only, never on DupLESS or ObliviSync.
	{"internal/peekaboo/...", join(top, duplessAndOsync, metal)},
	{"internal/metal/...", join(top, duplessAndOsync, peekaboo)},
	{"internal/metal/elgamal", []string{"internal/...", "cmd/..."}}, // primitive: no veil package
	{"internal/metal/circuit", []string{"internal/...", "cmd/..."}}, // circuits: no veil package
	{"internal/metal/segment", []string{"internal/...", "cmd/..."}}, // a file's layout over ids: no veil package
	{"internal/metal/twopc", []string{"internal/metal/ac/...", "internal/metal/oram/...", "internal/metal/elgamal/..."}},
	{"internal/metal/ac", []string{"internal/metal/oram/...", "internal/metal/elgamal/..."}},
	{"internal/metal/oram", []string{"internal/metal/ac/...", "internal/metal/elgamal/..."}},
	{"internal/metal/dataoram", []string{"internal/metal/ac/...", "internal/metal/oram/..."}},
	{"internal/metal/paillier", []string{"internal/...", "cmd/..."}}, // primitive: no veil package
	// Metal-SHARE: a protocol beside ac; the servers and the client sit above it.
	{"internal/metal/share", []string{"internal/metal/server/...", "internal/metal/client/...", "internal/metal/access/...", "internal/metal/oram/...", "internal/metal/dataoram/...", "internal/server/...", "internal/storage/...", "internal/profile/...", "internal/allinone/..."}},
	// the access pipeline composes the protocol pieces; servers and clients sit above it.
	{"internal/metal/server", []string{"internal/metal/client/...", "internal/profile/..."}},
	{"internal/metal/client", []string{"internal/metal/server/...", "internal/server/...", "internal/pki/..."}},
	{"internal/metal/access", []string{"internal/metal/server/...", "internal/metal/client/...", "internal/server/...", "internal/pki/...", "internal/profile/..."}},
	// Primitive Metal (§5.2 baseline): the ORAM with the data inside 2PC, never the real pipeline.
	{"internal/metal/primitive", []string{"internal/metal/access/...", "internal/metal/dataoram/...", "internal/metal/elgamal/...", "internal/metal/server/...", "internal/metal/client/...", "internal/storage/...", "internal/server/...", "internal/pki/...", "internal/profile/..."}},
	{"internal/metal/circuit/...", []string{"internal/metal/twopc/...", "internal/storage/...", "internal/profile/...", "internal/allinone/..."}},
	{"internal/metal/oram/...", []string{"internal/metal/ac/...", "internal/storage/...", "internal/profile/...", "internal/allinone/..."}},
	{"internal/metal/ac/...", []string{"internal/storage/...", "internal/profile/...", "internal/allinone/..."}},
	{"internal/metal/twopc/...", []string{"internal/storage/...", "internal/profile/...", "internal/allinone/..."}},
	// Peekaboo: formats at the bottom; the K-server and the V-server never import each other.
	{"internal/peekaboo/dpf", []string{"internal/...", "cmd/..."}}, // primitive composition: no veil package
	{"internal/peekaboo/pir", []string{"internal/peekaboo/wire", "internal/peekaboo/index", "internal/peekaboo/tlsconf", "internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/client", "internal/peekaboo/local"}},
	{"internal/peekaboo/wire", []string{"internal/peekaboo/dpf", "internal/peekaboo/pir", "internal/peekaboo/index", "internal/peekaboo/tlsconf", "internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/client", "internal/peekaboo/local"}},
	{"internal/peekaboo/tlsconf", []string{"internal/peekaboo/wire", "internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/client"}},
	{"internal/peekaboo/index", []string{"internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/client", "internal/peekaboo/local"}},
	{"internal/peekaboo/kserver", []string{"internal/peekaboo/vserver", "internal/peekaboo/client", "internal/peekaboo/local"}},
	{"internal/peekaboo/vserver", []string{"internal/peekaboo/kserver", "internal/peekaboo/index", "internal/peekaboo/client", "internal/peekaboo/local"}},
	{"internal/peekaboo/client", []string{"internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/index", "internal/peekaboo/local"}},

	// Top: the experiments (run by cmd/veil only), test helpers, the CLI.
	{"internal/bench/...", join(cli, testOnly)},
	{"internal/bench/ks/...", []string{"internal/keyserver/...", "internal/ksclient/...", "internal/storage/..."}}, // its own client, to measure the server alone
	{"internal/testutil/...", join(cli, benches, clients, osync, peekaboo, metal)},
	{"internal/archtest/...", []string{"internal/...", "cmd/..."}},
	{"cmd/...", []string{"internal/testutil/...", "internal/archtest/...", "internal/oblivisync/osynctest/...", "internal/storage/storagetest/..."}},
}
