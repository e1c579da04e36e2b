package apiserver

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ client.FieldIndexer = (*Server)(nil)

// IndexField registers a field index, as the manager's cache does; the
// controllers' List calls with client.MatchingFields need one.
func (s *Server) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	k.indexers[field] = extract
	k.index[field] = map[string]map[types.NamespacedName]struct{}{}
	for key, o := range k.objs {
		k.add(field, key, o)
	}
	return nil
}

func (k *kind) add(field string, key types.NamespacedName, o client.Object) {
	for _, v := range k.indexers[field](o) {
		set := k.index[field][v]
		if set == nil {
			set = map[types.NamespacedName]struct{}{}
			k.index[field][v] = set
		}
		set[key] = struct{}{}
	}
}

func (k *kind) reindex(key types.NamespacedName, o client.Object) {
	for field := range k.indexers {
		k.add(field, key, o)
	}
}

func (k *kind) unindex(key types.NamespacedName, o client.Object) {
	for field, extract := range k.indexers {
		for _, v := range extract(o) {
			if set := k.index[field][v]; set != nil {
				delete(set, key)
				if len(set) == 0 {
					delete(k.index[field], v)
				}
			}
		}
	}
}
