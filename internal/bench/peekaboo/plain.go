package pkbbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/index"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/server"
)

// plain is the report's "regular" baseline: one HTTPS key-value server with no privacy,
// holding keys and values together, searched with the same index (exact map, trigrams).
type plain struct {
	idx    *index.Index
	values map[wire.ID][]byte
	url    string
	http   *http.Client
	stop   context.CancelFunc
	done   chan error
}

func startPlain(dir string, pairs []pair) (*plain, error) {
	p := &plain{idx: index.New(), values: make(map[wire.ID][]byte, len(pairs))}
	for i := range pairs {
		p.idx.Put(&wire.KeyItem{ID: pairs[i].id, Key: pairs[i].key})
		p.values[pairs[i].id] = pairs[i].value
	}
	c, leaf, err := pki.InitDir(dir, "plain bench CA", "plain", []string{"127.0.0.1"}, time.Hour, time.Hour)
	if err != nil {
		return nil, err
	}
	stc, err := tlsconf.ServerConfig(tlsconf.Pair{Cert: leaf.CertPEM, Key: leaf.KeyPEM}, nil)
	if err != nil {
		return nil, err
	}
	ctc, err := tlsconf.ClientConfig(c.PEM, nil)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /search", p.handle)
	srv := &http.Server{Handler: mux, TLSConfig: stc}
	ctx, cancel := context.WithCancel(context.Background())
	p.url, p.stop, p.done = "https://"+ln.Addr().String()+"/search", cancel, make(chan error, 1)
	go func() { p.done <- server.ServeHTTP(ctx, srv, ln, time.Second) }()
	p.http = &http.Client{Transport: &http.Transport{TLSClientConfig: ctc, ForceAttemptHTTP2: true}}
	return p, nil
}

// handle: body = u8 mode, u8 advanced, u16 limit, query; reply = n x (b16 key?, b16 value).
func (p *plain) handle(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if len(b) < 5 {
		http.Error(w, "short", 400)
		return
	}
	q, limit := string(b[4:]), int(binary.BigEndian.Uint16(b[2:4]))
	var hits []index.Hit
	if b[0] == wire.ModeExact {
		hits = p.idx.Exact(q, limit, nil)
	} else {
		hits = p.idx.Substring(q, limit, nil)
	}
	var out []byte
	for _, h := range hits {
		if b[1] == 1 {
			out = binary.BigEndian.AppendUint16(out, uint16(len(h.Key)))
			out = append(out, h.Key...)
		}
		v := p.values[h.ID]
		out = binary.BigEndian.AppendUint16(out, uint16(len(v)))
		out = append(out, v...)
	}
	w.Write(out)
}

func (p *plain) search(q string, substring, advanced bool, limit int) error {
	b := []byte{wire.ModeExact, 0, 0, 0}
	if substring {
		b[0] = wire.ModeSubstring
	}
	if advanced {
		b[1] = 1
	}
	binary.BigEndian.PutUint16(b[2:], uint16(limit))
	resp, err := p.http.Post(p.url, "application/octet-stream", bytes.NewReader(append(b, q...)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func (p *plain) close() {
	p.stop()
	<-p.done
	p.http.CloseIdleConnections()
}
