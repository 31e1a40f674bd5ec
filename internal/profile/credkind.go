package profile

import "encoding/json"

// otherKind names what raw is when it is another of the files init takes than the one a
// flag wants (want: "store", "ks" or "invite"), with the flag that takes it, so that a file
// given to the wrong flag is named as such; "" for anything else, which the credential's
// own parser then judges (found by a user walkthrough: a store credential given as
// --ks-credential was "kswire: malformed message: credential version 0, want 1", a key
// server credential given as --store-credential "secret must be 32 bytes of unpadded
// base64url").
func otherKind(raw []byte, want string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	switch {
	case m["veil_store_credential"] != nil && want != "store":
		return "a storage service credential: give it as --store-credential"
	case m["veil_invite"] != nil && want != "invite":
		return "an invitation: give it as --invite"
	case m["suite"] != nil && m["cert_pem"] != nil && want != "ks":
		return "a key server credential: give it as --ks-credential"
	}
	return ""
}
