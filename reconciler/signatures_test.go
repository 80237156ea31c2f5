package reconciler

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"golang.org/x/crypto/ssh"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// sshKey returns a fresh OpenSSH PEM private key, encrypted when password is
// set, and its authorized_keys line.
func sshKey(t *testing.T, password string) (private, authorized []byte) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if password == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(password))
	}
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), ssh.MarshalAuthorizedKey(sshPub)
}

func pgpPublicKey(t *testing.T) []byte {
	t.Helper()
	e, err := openpgp.NewEntity("reviewer", "", "reviewer@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return b.Bytes()
}

func TestParseTrustedKeys(t *testing.T) {
	_, a := sshKey(t, "")
	_, b := sshKey(t, "")
	pgp := pgpPublicKey(t)

	keys, err := parseTrustedKeys(map[string][]byte{
		"agents.sshpub": append(append([]byte{}, a...), b...),
		"forge.asc":     pgp,
		"README":        []byte("not a key, ignored"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys.SSH) != 2 || len(keys.OpenPGP) != 1 {
		t.Fatalf("got %d SSH and %d OpenPGP keys, want 2 and 1", len(keys.SSH), len(keys.OpenPGP))
	}

	for name, data := range map[string]map[string][]byte{
		"no trusted key":         {"identity": a, "key.pub": a},
		"wrong kind (.asc)":      {"agent.asc": a},
		"wrong kind (.sshpub)":   {"forge.sshpub": pgp},
		"malformed SSH key":      {"agent.sshpub": []byte("ssh-ed25519 !!!")},
		"malformed OpenPGP key":  {"forge.asc": []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!\n")},
		"empty trusted key only": {"agent.sshpub": nil},
	} {
		if _, err := parseTrustedKeys(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRelevantDirs(t *testing.T) {
	obj := &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{
		ClusterID: "me",
		Provider:  &gitpeerv1alpha1.ProviderSpec{Enabled: true},
		Consumer:  &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"p1", "p2"}},
	}}
	if got, want := relevantDirs(obj), []string{"me", "p1/me", "p1/terms.yaml", "p2/me", "p2/terms.yaml"}; !slices.Equal(got, want) {
		t.Fatalf("provider and consumer: %v, want %v", got, want)
	}
	obj.Spec.Provider = nil
	if got, want := relevantDirs(obj), []string{"p1/me", "p1/terms.yaml", "p2/me", "p2/terms.yaml"}; !slices.Equal(got, want) {
		t.Fatalf("consumer: %v, want %v", got, want)
	}
}

// The signing Secret follows the SigningKey API doc: an SSH key under
// "identity" is decrypted with "password".
func TestSignerFromSecretSSHPassword(t *testing.T) {
	priv, _ := sshKey(t, "s3cret")
	if _, err := signerFromSecret(map[string][]byte{"identity": priv, "password": []byte("s3cret")}); err != nil {
		t.Fatal(err)
	}
	if _, err := signerFromSecret(map[string][]byte{"identity": priv, "password": []byte("wrong")}); err == nil {
		t.Fatal("wrong password accepted")
	}
	if _, err := signerFromSecret(map[string][]byte{}); err == nil || !strings.Contains(err.Error(), "identity") {
		t.Fatalf("empty Secret: %v", err)
	}
}
