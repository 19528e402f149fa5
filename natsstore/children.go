package natsstore

import (
	"context"
	"slices"
	"strings"

	"looprig/rig/storage"
)

// Children implements storage.ChildLister. The catalog bucket has no
// directories to read one level of, so it lists the keys under prefix as
// Keys does (headers only, one watch of the prefix's subjects) and keeps
// the first segment after prefix of each. Deleted keys are not listed, so
// a segment whose keys were all deleted is not returned either.
func (s *Store) Children(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := storage.ValidateChildPrefix(prefix); err != nil {
		return nil, err
	}
	filter, _ := keysFilter(prefix) // a valid prefix always has one
	keys, err := s.listKeys(ctx, s.catalog, filter, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		seg, _, _ := strings.Cut(k[len(prefix):], "/")
		out = append(out, seg)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
