// What the soak reads of the store through the CLI: the rows of
// `ls --json` and the records of `log --json`, and the turns and fences in
// them.

package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// lsRow is what the soak reads of one `ls --json` row.
type lsRow struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	Holder *struct {
		PID int `json:"pid"`
	} `json:"holder"`
	LastSeq uint64 `json:"last_seq"`
}

func describeRow(r lsRow) string {
	if r.Holder != nil {
		return fmt.Sprintf("%s (held by pid %d)", r.State, r.Holder.PID)
	}
	return r.State
}

func (s *soaker) listing(ctx context.Context) ([]lsRow, error) {
	out, errOut, code, err := s.looprig(ctx, "ls", "--json")
	if err != nil || code != 0 {
		return nil, fmt.Errorf("ls: exit %d %v: %s", code, err, firstLine(errOut, out))
	}
	var rows []lsRow
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("ls --json: %v", err)
	}
	return rows, nil
}

// row is the listing of session id; no session may be broken.
func (s *soaker) row(ctx context.Context, id string) (lsRow, error) {
	rows, err := s.listing(ctx)
	if err != nil {
		return lsRow{}, err
	}
	for _, r := range rows {
		if r.ID == id {
			return r, nil
		}
	}
	return lsRow{}, errors.New("ls: the session is not listed")
}

// noBroken: no session of the store is listed as broken.
func (s *soaker) noBroken(ctx context.Context) error {
	rows, err := s.listing(ctx)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.State == "broken" {
			return fmt.Errorf("ls: session %s is broken: %s", r.ID, r.Reason)
		}
	}
	return nil
}

// wantLive: the row shows the session live in host pid.
func (s *soaker) wantLive(r lsRow, pid int) error {
	if r.State != "live" || r.Holder == nil || r.Holder.PID != pid {
		return fmt.Errorf("session is %s, want live in host %d", describeRow(r), pid)
	}
	return nil
}

func (s *soaker) journal(ctx context.Context, id string) ([]record, error) {
	out, errOut, code, err := s.looprig(ctx, "log", id, "--json")
	if err != nil || code != 0 {
		return nil, fmt.Errorf("log: exit %d %v: %s", code, err, firstLine(errOut, out))
	}
	return parseLog(out)
}

// turnSpan is a turn of the journal: its TurnStarted and its terminal
// record (nil while open).
type turnSpan struct {
	id  string
	end *record
}

// turnsAfter lists the turns started after seq tip.
func turnsAfter(recs []record, tip uint64) []turnSpan {
	var turns []turnSpan
	at := map[string]int{}
	for i, r := range recs {
		switch r.Type {
		case "TurnStarted":
			if r.Seq > tip {
				at[r.TurnID] = len(turns)
				turns = append(turns, turnSpan{id: r.TurnID})
			}
		case "TurnDone", "TurnFailed", "TurnInterrupted":
			if j, ok := at[r.TurnID]; ok && turns[j].end == nil {
				turns[j].end = &recs[i]
			}
		}
	}
	return turns
}

func lastFence(recs []record) uint64 {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == "fence" {
			return recs[i].Epoch
		}
	}
	return 0
}
