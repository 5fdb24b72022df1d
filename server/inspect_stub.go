package server

import "github.com/runehost/runehost/api"

// Inspect: a stand-in until the CLI branch's server/inspect.go lands.
func (s *Service) Inspect(inv string) (any, error) {
	return s.State(inv)
}

// Checkpoint: a stand-in.
func (s *Service) Checkpoint(inv string) ([]byte, error) {
	return nil, api.Errorf(api.CodeNotFound, "no checkpoint")
}
