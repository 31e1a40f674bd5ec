package profile

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/open"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/words"
)

// A mistyped storage location never becomes a new, empty store: only init creates a local
// storage directory, and init checks that a remote location answers (with the credential)
// before it writes the profile.

// ErrNoStorage is a local storage location that does not exist.
var ErrNoStorage = errors.New("storage location does not exist")

// existingLocal fails when location is a local directory that is not there (a typo in
// VEIL_STORAGE or the profile): opening it would silently create an empty store.
func existingLocal(location string) error {
	dir, ok := open.LocalDir(location)
	if !ok {
		return nil
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s (a typo in %s or --storage? only 'veil init' creates a local store)", ErrNoStorage, dir, EnvStorage)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("storage location %s is not a directory", dir)
	}
	return nil
}

// checkStorage opens the storage location with the credential init was given and asks it
// one question (list the root), so that init fails now, naming the location, rather than
// at the first put. A local location is created.
func checkStorage(ctx context.Context, location string, storeCred []byte, cred open.Credentials) (storage.Backend, error) {
	if storeCred != nil {
		if kind := otherKind(storeCred, "store"); kind != "" {
			return nil, fmt.Errorf("the store credential is %s", kind)
		}
		var sc storewire.Credential
		if err := json.Unmarshal(storeCred, &sc); err != nil {
			return nil, fmt.Errorf("store credential: %w", err)
		}
		cred.Store = &sc
	}
	be, err := open.Open(ctx, location, cred)
	if err != nil {
		return nil, fmt.Errorf("storage %s: %w", location, err)
	}
	if _, err := be.List(ctx, ""); err != nil && !errors.Is(err, storage.ErrNotFound) {
		if lacks, ok := unnamedHost(err, "--storage", "veil store cert"); ok {
			return nil, fmt.Errorf("storage %s %s", location, lacks)
		}
		return nil, fmt.Errorf("storage %s does not answer: %w", location, err)
	}
	if used, err := dupless.InUse(ctx, be); err != nil {
		return nil, fmt.Errorf("storage %s: %w", location, err)
	} else if used {
		return nil, fmt.Errorf("storage %s already holds files of another veil key (a second init from the same invitation?): "+
			"a new key could read none of them; use the profile directory that stored them, or ask for a new account", location)
	}
	return be, nil
}

// checkKS asks the key server for one derivation with the credential init was given (and
// the profile's transport and timeout, at urls: the replicas the profile's commands will
// ask, $VEIL_KS_URL's where set), so that a credential the key server refuses, or one of
// another key server, fails init now, in one line naming the key server and what was
// wrong, rather than every put falling back to random keys without deduplication (exit
// 4). A key server that does not answer, or rate-limits (it accepts the credential
// first), is no fault of the credential: warn tells of it in one line, and init goes on
// (a user setting up offline).
func checkKS(ctx context.Context, cred *ksclient.Credential, cfg *Config, urls []string, warn func(error)) error {
	cl, err := newKS(cred, cfg, urls, nil)
	if err != nil {
		return fmt.Errorf("key server: %w", err)
	}
	defer cl.Close()
	err = cl.Check(ctx)
	var delayed *ksclient.DelayedError
	if lacks, ok := unnamedHost(err, "--ks-url", "veil keyserver cert"); ok {
		return fmt.Errorf("key server %s %s", cl.Where(), lacks)
	}
	if problem := ksclient.CredentialProblem(err); problem != "" {
		return fmt.Errorf("key server %s %s: nothing was written; ask its operator for a credential of it "+
			"('veil keyserver client add', or a new invitation)", cl.Where(), problem)
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case warn == nil:
	case errors.As(err, &delayed):
		warn(fmt.Errorf("key server %s accepted the credential but delayed its answer past this client's timeout "+
			"(%v per attempt, %d attempts: a delay-mode rate limit): puts store without deduplication until it answers in time",
			cl.Where(), delayed.Timeout, delayed.Attempts))
	case errors.Is(err, ksclient.ErrRateLimited):
		warn(fmt.Errorf("key server %s accepted the credential but has reached this client's rate limit: "+
			"puts store without deduplication until it answers", cl.Where()))
	default:
		warn(fmt.Errorf("could not check the credential with key server %s (%w); init goes on: "+
			"puts store without deduplication until it answers", cl.Where(), err))
	}
	return nil
}

// unnamedHost says, after "key server URL" or "storage LOCATION", that the server's
// certificate does not name the host it was dialed by, when err is that TLS failure
// (x509.HostnameError), and the two ways out: dial it by a name the certificate has (flag),
// or have its operator add this one (command). It says nothing of the credential (the name
// is checked before the CA, so its CA may be the credential's or not; found by
// a user walkthrough: a key server dialed by a new name was "not the server the
// credential trusts", with advice to ask for a new credential, where its operator had only
// to add the name with 'veil keyserver cert'; the store "did not answer").
func unnamedHost(err error, flag, command string) (string, bool) {
	var he x509.HostnameError
	if err == nil || !errors.As(err, &he) || he.Host == "" {
		return "", false
	}
	return fmt.Sprintf("serves a certificate that does not name %s (%v): nothing was written; "+
		"give %s a name the certificate has, or have the server's operator add this one ('%s --dir DIR --host %s')",
		he.Host, he.Error(), flag, command, he.Host), true
}

// CheckPassphrase fails unless passphrase opens the key file in dir (and says so before
// anything else is asked: passwd checks the current passphrase before the new one).
func CheckPassphrase(dir string, passphrase []byte) error {
	if _, err := Load(dir, Overrides{}); err != nil {
		return err
	}
	kf, err := readKeyFile(dir)
	if err != nil {
		return err
	}
	_, err = dupless.OpenKeyFile(kf, passphrase)
	return err
}

// CheckKeyFile fails, saying what to do, if the profile in dir has no key file: commands
// check it before they ask for the passphrase (a user typed it, then learned the file was
// missing).
func CheckKeyFile(dir string) error {
	_, err := readKeyFile(dir)
	return err
}

// readKeyFile reads the key file of the profile in dir (its config read already). A
// missing one says what to do: restore it from the copy of the profile directory init
// asked for (found by a user walkthrough: "key file: open .../key: no such file or
// directory" left the user without a next step).
func readKeyFile(dir string) ([]byte, error) {
	path := filepath.Join(dir, KeyFile)
	kf, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("the key file %s is missing: restore it from your copy of the profile directory "+
			"(without it nothing stored can be read)", path)
	case err != nil:
		return nil, fmt.Errorf("key file: %w", err)
	}
	return kf, nil
}

// MinPassphrase is the length under which a new passphrase draws a warning: the key file
// is as strong as the passphrase against anyone holding a copy of it.
const MinPassphrase = 12

// WeakPassphrase returns a warning for a short new passphrase, or "".
func WeakPassphrase(p []byte) string {
	if n := len([]rune(string(p))); n < MinPassphrase {
		return fmt.Sprintf("warning: a passphrase of %s is easy to guess for anyone with a copy of the key file; use %d or more (several words)", words.Count(n, "character", "characters"), MinPassphrase)
	}
	return ""
}
