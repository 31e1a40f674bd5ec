// Package open turns a location string into a storage.Backend, for the CLI and the DupLESS
// client:
//
//	/srv/veil, ./dir, local:/srv/veil      a local directory (local backend)
//	s3://host:port/bucket[/prefix]?tls=0   an S3 bucket (keys from Credentials or the
//	                                        AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY env)
//	veil://host:port                       veil's storage service over HTTPS (remote backend;
//	                                        the user's credential pins the service's CA)
//	veil+http://host:port                  the same over plain HTTP (loopback development)
//	veil://host1:port,host2:port           a service served by several nodes: requests are
//	                                        spread over them, and fail over from one that
//	                                        is down (docs/deploy.md)
//
// It imports storage and its backends; nothing above them.
package open
