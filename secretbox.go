package mcpflow

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// SecretBox seals request-scoped secrets (headers_from_context values) so a
// durable submit can carry them through Temporal: the workflow input and
// activity input hold only AES-256-GCM ciphertext, bound to the task id, and
// the worker that runs the submit opens it in memory. serve and worker
// processes share the key through mcp_tasks.secrets_key.
type SecretBox struct {
	aead cipher.AEAD
}

// NewSecretBox derives the box's key from secret (SHA-256 of it), which
// must not be empty.
func NewSecretBox(secret string) (*SecretBox, error) {
	if secret == "" {
		return nil, errors.New("secret box key must not be empty")
	}
	key := sha256.Sum256([]byte(secret))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &SecretBox{aead: aead}, nil
}

// NewRandomSecretBox is a box with a key of this process only (mcpflow dev,
// where one process both seals and opens).
func NewRandomSecretBox() *SecretBox {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	box, _ := NewSecretBox(string(b[:]))
	return box
}

// Seal encrypts secrets for the task taskID; nil or empty secrets seal to "".
func (b *SecretBox) Seal(taskID string, secrets map[string]string) (string, error) {
	if len(secrets) == 0 {
		return "", nil
	}
	plain, err := json.Marshal(secrets)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, plain, []byte(taskID))), nil
}

// Open decrypts what Seal returned for the same task. An error never
// contains the secrets.
func (b *SecretBox) Open(taskID, sealed string) (map[string]string, error) {
	if sealed == "" {
		return nil, nil
	}
	raw, err := base64.StdEncoding.DecodeString(sealed)
	n := b.aead.NonceSize()
	if err != nil || len(raw) < n {
		return nil, errors.New("sealed request secrets are malformed")
	}
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(taskID))
	if err != nil {
		return nil, errors.New("sealed request secrets cannot be opened: serve and worker must share mcp_tasks.secrets_key")
	}
	var out map[string]string
	if err := json.Unmarshal(plain, &out); err != nil {
		return nil, errors.New("sealed request secrets are malformed")
	}
	return out, nil
}
