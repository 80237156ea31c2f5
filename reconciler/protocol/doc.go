// Package protocol is gitpeer's format of a peering repository: the paths of
// its files, the size limits of a reading, the kustomized-directory rule,
// strict decoding, the documents as gitpeer writes them, the checks of
// Tenants and Identities, and the messages of the agent's commits. The names
// it lays out (file names, actions, trailers) are package vocabulary's. The
// agent and every CLI command (verify, audit, records, request, revoke) use
// it, so a repository's CI rejects exactly what the agent would, and `gitpeer
// audit` reads exactly what the agent writes.
package protocol
