package open

import (
	"encoding/base64"
	"strings"

	"github.com/veil-project/veil/internal/storewire"
)

func testCred() storewire.Credential {
	return storewire.Credential{Version: storewire.CredentialVersion, User: "alice",
		Secret: base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("k", storewire.SecretSize)))}
}
