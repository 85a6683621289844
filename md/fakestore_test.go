package md

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// memStore is a Store for md's own tests (package md/store's stores
// import md). It keeps a copy of what was saved, refuses what Validate
// refuses, and fails Load with loadErr when set.
type memStore struct {
	mu      sync.Mutex
	data    []byte // JSON of the saved records; nil before the first Save
	loadErr error
}

func (s *memStore) Load(ctx context.Context) (*Records, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return nil, s.loadErr
	}
	if s.data == nil {
		return nil, fmt.Errorf("memStore: %w", os.ErrNotExist)
	}
	var rs Records
	if err := json.Unmarshal(s.data, &rs); err != nil {
		return nil, err
	}
	return &rs, nil
}

func (s *memStore) Save(ctx context.Context, rs *Records) error {
	if err := rs.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = b
	return nil
}
