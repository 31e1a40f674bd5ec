package client

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/access"
)

// ProfileFile is the Metal part of a veil profile directory: the deployment joined, the
// accounts created (their capabilities are bearer secrets) and the files written, sealed
// under the profile's passphrase (docs/formats/metal-profile.md).
const ProfileFile = "metal.json"

// Profile is a user's Metal state.
type Profile struct {
	Version    int               `json:"version"`
	Deployment access.Deployment `json:"deployment"`
	Accounts   []AccountRecord   `json:"accounts"`
	Share      *ShareRecord      `json:"share,omitempty"`    // Metal-SHARE keys (shareprofile.go)
	Received   []ReceivedRecord  `json:"received,omitempty"` // capabilities others shared with this profile
	Files      []Span            `json:"files,omitempty"`    // written from this profile, by first id

	seal *sealing
}

// AccountRecord is one account: its capability (hex) and file ids.
type AccountRecord struct {
	Capability string `json:"capability"`
	First      uint64 `json:"first"`
	Count      uint32 `json:"count"`
}

// ErrNoProfile is a profile directory without metal.json.
var ErrNoProfile = errors.New("no Metal deployment in this profile (run veil metal join DEPLOYMENT-FILE)")

// Exists reports whether dir holds a Metal profile (ErrNoProfile if not), so a command can
// fail before asking for a passphrase.
func Exists(dir string) error {
	_, err := os.Stat(filepath.Join(dir, ProfileFile))
	if errors.Is(err, os.ErrNotExist) {
		return ErrNoProfile
	}
	return err
}

// Join starts the profile in dir, sealed under pass, or replaces the deployment of an
// existing one (which pass must open).
func Join(dir string, pass []byte, d access.Deployment) (*Profile, error) {
	p, err := LoadProfile(dir, pass)
	switch {
	case errors.Is(err, ErrNoProfile):
		p = &Profile{Version: 1}
		if p.seal, err = newSealing(pass); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case p.Deployment.Server1 != d.Server1 && len(p.Accounts) > 0:
		return nil, errors.New("this profile already holds accounts of another Metal deployment")
	}
	p.Deployment = d
	return p, p.Save(dir)
}

// ErrUnsealed is an unsealed metal.json (written by veil before session 5). It is not
// sealed under whatever passphrase a command was given: a mistyped one would lock the
// file under it. Seal does it, once the caller made sure of the passphrase.
var ErrUnsealed = errors.New("metal.json is stored unsealed (an earlier veil wrote it): run 'veil metal seal' to seal it under the profile's passphrase")

// LoadProfile opens dir's sealed Metal profile with pass (ErrUnsealed for an unsealed one).
func LoadProfile(dir string, pass []byte) (*Profile, error) {
	b, err := readProfile(dir)
	if err != nil {
		return nil, err
	}
	if !isSealed(b) {
		return nil, ErrUnsealed
	}
	return parseProfile(b, pass)
}

func readProfile(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, ProfileFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoProfile
	}
	return b, err
}

// Unsealed reports whether dir's metal.json is the unsealed JSON of an earlier version
// (ErrNoProfile if there is none), so a command can tell before asking for a passphrase.
func Unsealed(dir string) (bool, error) {
	b, err := readProfile(dir)
	return err == nil && !isSealed(b), err
}

// Seal seals dir's unsealed metal.json under pass (a new file key), keeping its contents.
// The caller makes sure pass is the one meant (typed twice, given explicitly, or checked
// against the profile's veil key): nothing in an unsealed file can check it. A sealed
// file is left alone (veil passwd changes its passphrase).
func Seal(dir string, pass []byte) error {
	b, err := readProfile(dir)
	if err != nil {
		return err
	}
	if isSealed(b) {
		return fmt.Errorf("%s is already sealed (veil passwd changes its passphrase)", ProfileFile)
	}
	return reseal(dir, b, nil, pass)
}

// reseal opens b (sealed with old, or unsealed) and saves it sealed under a new file key
// and pass.
func reseal(dir string, b, old, pass []byte) error {
	p, err := parseProfile(b, old)
	if err != nil {
		return err
	}
	if p.seal, err = newSealing(pass); err != nil {
		return err
	}
	return p.Save(dir)
}

// parseProfile opens metal.json's bytes b: sealed, with pass; unsealed JSON of an earlier
// version as it is (its seal is nil: it cannot be saved until given one).
func parseProfile(b, pass []byte) (*Profile, error) {
	var p Profile
	plain := b
	var err error
	if isSealed(b) {
		if p.seal, plain, err = openSealed(b, pass); err != nil {
			return nil, err
		}
	}
	if err := json.Unmarshal(plain, &p); err != nil || p.Version != 1 {
		return nil, fmt.Errorf("%s: not a version-1 Metal profile", ProfileFile)
	}
	return &p, nil
}

// Save writes the profile, sealed, atomically.
func (p *Profile) Save(dir string) error {
	if p.seal == nil {
		return ErrUnsealed
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	sealed, err := p.seal.seal(b)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ProfileFile), sealed, 0o600, true)
}

// ChangePassphrase re-seals dir's profile under a new passphrase (a new file key). An
// unsealed one (ErrUnsealed) is sealed under new: old has nothing to open there.
func ChangePassphrase(dir string, old, new []byte) error {
	b, err := readProfile(dir)
	if err != nil {
		return err
	}
	return reseal(dir, b, old, new)
}

// Add records a new account.
func (p *Profile) Add(a Account) {
	p.Accounts = append(p.Accounts, AccountRecord{Capability: hex.EncodeToString(a.Capability), First: a.First, Count: a.Count})
}

// CapabilityFor returns the capability of the account holding file id.
func (p *Profile) CapabilityFor(id uint64) ([]byte, error) {
	for _, a := range p.Accounts {
		if id >= a.First && id-a.First < uint64(a.Count) {
			c, err := hex.DecodeString(a.Capability)
			if err != nil || len(c) != ac.CapabilityLen {
				return nil, fmt.Errorf("%s: capability of account %d is corrupt", ProfileFile, a.First)
			}
			return c, nil
		}
	}
	if c, ok := p.receivedFor(id); ok {
		return c, nil
	}
	return nil, fmt.Errorf("no capability for file id %d in this profile (veil metal ls lists yours)", id)
}

// Overlapping returns the recorded files other than the one at s.First that share an id
// with s.
func (p *Profile) Overlapping(s Span) []Span {
	var out []Span
	for _, f := range p.Files {
		if f.First != s.First && f.First <= s.Last() && s.First <= f.Last() {
			out = append(out, f)
		}
	}
	return out
}

// Record notes that s was written: it replaces the file at s.First and drops the files
// it overlapped (their segments are overwritten).
func (p *Profile) Record(s Span) {
	p.Files = slices.DeleteFunc(p.Files, func(f Span) bool { return f.First <= s.Last() && s.First <= f.Last() })
	p.Files = append(p.Files, s)
	slices.SortFunc(p.Files, func(a, b Span) int { return cmp.Compare(a.First, b.First) })
}
