// Package profile is a DupLESS user's configuration on disk: where the storage service is,
// how to reach the key server, and the sealed master key. It turns that into a ready
// dupless.Client, applying environment overrides (as restic does). It is client-side
// glue: it may import dupless, ksclient, storage and invite, never the services or cmd.
package profile
