// Package share is Metal-SHARE (paper Section 6): anonyms, SendCapability and the
// capability broadcast list, the third component of Metal after Metal-AC
// (internal/metal/ac) and Metal-ORAM.
//
// Terms (docs/formats/metal-anonym.md, docs/formats/metal-share.md):
//
//	ServerKeys  what one server holds for sharing: its own Paillier key pair (Figure 9's
//	            (sk_j, pk_j)), its XOR share of the anonym master key AMK and of the
//	            broadcast master key BMK
//	UserKeys    what a user gets at enrolment, inside 2PC from its account capability:
//	            ID_U (the account's first file id), AK_U = AES_AMK(ID_U) (the anonym key)
//	            and BK_U = AES_BMK(ID_U) (the broadcast key)
//	Anonym      (Enc_pk1(s1), Enc_pk2(s2)) with s2 - s1 = s = ID_U || i || MAC_AK(ID_U || i),
//	            made by the user alone (NewAnonym), rerandomized by the sender before
//	            every use (Rerandomize)
//	Entry       one broadcast-list item: EAX under BK_U of the receiver's new capability,
//	            the anonym index and the permission, 96 bytes
//	List        Server 1's broadcast list on its bbolt file: entries appended by
//	            SendCapability, shuffled when an epoch closes, served to every user
//
// Party runs the two 2PC computations of sharing on a twopc.Session: Enroll (UserKeyGen)
// and Send (AnonymDecrypt's merge and MAC check, the sender's capability check reused
// from Metal-AC, the grant of the receiver's capability, the broadcast key derivation and
// the entry's encryption). Each server decrypts its own anonym share outside 2PC; the
// shares are merged (subtracted) inside. A refused request (forged anonym, bad capability)
// still produces an entry, under a random key, so neither server learns the verdict.
//
// Layering: a protocols package. It imports internal/metal/ac, circuit, twopc, paillier,
// bbolt and the standard library; it must not import the servers, the client, access,
// storage, other systems or cmd.
package share
