package natsstore

import (
	"context"
	"strconv"
)

// ChangeStamp implements storage.ChangeStamper without detecting changes:
// every stamp is new. A holder's death shows only when its presence is
// asked (see live), and lease renewals rewrite the lease bucket all the
// time, so no cheap summary of the server's state would stay equal while
// nothing a listing shows changes. Listings over a NATS store are read in
// full each time.
func (s *Store) ChangeStamp(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return "n" + strconv.FormatUint(s.stamps.Add(1), 36), nil
}
