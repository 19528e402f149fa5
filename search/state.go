package search

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

// A session's state is stored (bucket sessions) as what Update checks of
// every session at every search, then the whole state as JSON:
//
//	'1' uvarint(Seq) uvarint(Epoch) settled(0|1) JSON(sessionState)
//
// so that a search over a thousand sessions whose journals cannot have
// grown (unheld at the epoch they were read to the tip) decodes none of
// them: that was 6–26 ms of a search in a new process.
const stateFormat = '1'

var errBadState = errors.New("bad session state")

// storedState is a session's state as read from the index: its head,
// and the rest decoded when asked (full).
type storedState struct {
	seq, epoch uint64
	settled    bool
	raw        []byte // the JSON, a copy: valid past the transaction
	s          *sessionState
}

// encodeState is s as stored.
func encodeState(s *sessionState) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 1+2*binary.MaxVarintLen64+1+len(body))
	out = append(out, stateFormat)
	out = binary.AppendUvarint(out, s.Seq)
	out = binary.AppendUvarint(out, s.Epoch)
	settled := byte(0)
	if s.Settled {
		settled = 1
	}
	out = append(out, settled)
	return append(out, body...), nil
}

// decodeStateHead reads the head of a stored state v and keeps a copy of
// the rest.
func decodeStateHead(v []byte) (*storedState, error) {
	if len(v) < 4 || v[0] != stateFormat {
		return nil, errBadState
	}
	st := &storedState{}
	i := 1
	var n int
	if st.seq, n = binary.Uvarint(v[i:]); n <= 0 {
		return nil, errBadState
	}
	i += n
	if st.epoch, n = binary.Uvarint(v[i:]); n <= 0 {
		return nil, errBadState
	}
	i += n
	if i >= len(v) || v[i] > 1 {
		return nil, errBadState
	}
	st.settled = v[i] == 1
	st.raw = append([]byte(nil), v[i+1:]...)
	return st, nil
}

// full decodes the whole state, once.
func (st *storedState) full() (*sessionState, error) {
	if st.s == nil {
		var s sessionState
		if err := json.Unmarshal(st.raw, &s); err != nil {
			return nil, err
		}
		if s.Seq != st.seq || s.Epoch != st.epoch || s.Settled != st.settled {
			return nil, errBadState
		}
		st.s, st.raw = &s, nil
	}
	return st.s, nil
}

// decodeState decodes a stored state whole.
func decodeState(v []byte) (*sessionState, error) {
	st, err := decodeStateHead(v)
	if err != nil {
		return nil, err
	}
	return st.full()
}
