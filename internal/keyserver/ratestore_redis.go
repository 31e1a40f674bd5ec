package keyserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStore shares rate-limit state between key server replicas. Every operation is one
// atomic server-side step (a Lua script or SET NX), so replicas never race.
type redisStore struct {
	c      *redis.Client
	prefix string
	// countTTL keeps an epoch's count at least until the epoch ends: 60 days, or two
	// epochs if that is longer (Open sets it from the rate limit).
	countTTL time.Duration
	mu       sync.Mutex
	tokens   map[string]string
}

var takeScript = redis.NewScript(`
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if c + n > tonumber(ARGV[2]) then return 0 end
redis.call('INCRBY', KEYS[1], n)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// expScript mirrors expStep: fields e (last epoch) and d (next delay, ns); returns the total.
var expScript = redis.NewScript(`
local e = tonumber(redis.call('HGET', KEYS[1], 'e') or '-2')
local cur = tonumber(redis.call('HGET', KEYS[1], 'd') or '0')
local epoch, n, start, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if cur <= 0 or epoch > e + 1 then cur = start end
local total = 0
for i = 1, n do
  total = total + cur
  cur = math.min(2 * cur, max)
end
redis.call('HSET', KEYS[1], 'e', epoch, 'd', cur)
return total`)

// redisLog puts go-redis's own messages (a pool that cannot dial, each time) into the key
// server's JSON log at debug, not on stderr as plain lines: the refusals they cause are
// logged as warnings already (handleEvaluate). go-redis has one logger per process.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "), "from", "go-redis")
}

func openRedisStore(ctx context.Context, rawURL string, log *slog.Logger) (*redisStore, error) {
	if log != nil {
		redis.SetLogger(redisLog{log})
	}
	u, err := url.Parse(rawURL)
	if err != nil { // url.Parse's error quotes the whole URL, password included
		return nil, errors.New("ratelimit store: not a valid redis:// URL")
	}
	shown := u.Redacted() // errors name the store without its password
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("ratelimit store %q: %s", shown, strings.ReplaceAll(err.Error(), rawURL, shown))
	}
	// Redis gone, a replica refuses (503) well within a client's attempt (ksclient: 2 s),
	// which then tries another replica or stores at once: one retry of one dial, not
	// go-redis's 3 retries of 5 dials (about 2 s). max_retries in the URL still applies.
	if !u.Query().Has("max_retries") {
		opt.MaxRetries = 1
	}
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("ratelimit store %q: %w", shown, err)
	}
	return &redisStore{c: c, prefix: "veil:ks:", countTTL: 60 * 24 * time.Hour, tokens: map[string]string{}}, nil
}

func (s *redisStore) Take(ctx context.Context, client string, epoch, n, limit int64) (bool, error) {
	key := s.prefix + "count:" + client + ":" + strconv.FormatInt(epoch, 10)
	// Counts expire after their epoch has ended (countTTL from the last charge); an
	// earlier expiry would give the client a fresh budget within the epoch.
	r, err := takeScript.Run(ctx, s.c, []string{key}, n, limit, s.countTTL.Milliseconds()).Int()
	return r == 1, err
}

func (s *redisStore) Lock(ctx context.Context, client string, ttl time.Duration) (bool, error) {
	var b [16]byte
	rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	ok, err := s.c.SetNX(ctx, s.prefix+"lock:"+client, tok, ttl).Result()
	if err != nil || !ok {
		return false, err
	}
	s.mu.Lock()
	s.tokens[client] = tok
	s.mu.Unlock()
	return true, nil
}

func (s *redisStore) Unlock(ctx context.Context, client string) error {
	s.mu.Lock()
	tok := s.tokens[client]
	delete(s.tokens, client)
	s.mu.Unlock()
	return unlockScript.Run(ctx, s.c, []string{s.prefix + "lock:" + client}, tok).Err()
}

func (s *redisStore) ExpDelay(ctx context.Context, client string, epoch int64, n int, start, max time.Duration) (time.Duration, error) {
	t, err := expScript.Run(ctx, s.c, []string{s.prefix + "exp:" + client}, epoch, n, int64(start), int64(max)).Int64()
	return time.Duration(t), err
}

func (s *redisStore) Close() error { return s.c.Close() }
