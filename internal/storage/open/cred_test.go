package open

import (
	"encoding/base64"
	"strings"

	"github.com/veil-project/veil/internal/store/api"
)

func testCred() api.Credential {
	return api.Credential{Version: api.CredentialVersion, User: "alice",
		Secret: base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("k", api.SecretSize)))}
}
