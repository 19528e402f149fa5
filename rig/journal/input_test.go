package journal

import (
	"errors"
	"reflect"
	"testing"
)

// Input records: the input command as every version wrote it (with its
// text, hidden, an end of file, and without its text, as now) and the
// input_written that says what went in decode to the same Command they
// were written from, and re-encode to the same bytes; malformed ones fail
// closed.
func TestInputRecords(t *testing.T) {
	good := map[string]Command{
		// Written by earlier versions: the text in the command.
		`{"name":"input","loop_id":"l","turn_id":"t","input":"yes\n","bytes":4,"from":"tui"}`: {Name: CommandInput, LoopID: "l", TurnID: "t", Input: "yes\n", Bytes: 4, From: "tui"},
		`{"name":"input","loop_id":"l","turn_id":"t","hidden":true,"bytes":9,"from":"cli"}`:   {Name: CommandInput, LoopID: "l", TurnID: "t", Hidden: true, Bytes: 9, From: "cli"},
		`{"name":"input","loop_id":"l","turn_id":"t","eof":true,"from":"cli"}`:                {Name: CommandInput, LoopID: "l", TurnID: "t", EOF: true, From: "cli"},
		// Written now: the text follows in input_written.
		`{"name":"input","loop_id":"l","turn_id":"t","bytes":4,"from":"tui"}`:                          {Name: CommandInput, LoopID: "l", TurnID: "t", Bytes: 4, From: "tui"},
		`{"name":"input_written","loop_id":"l","turn_id":"t","input":"yes\n","bytes":4,"input_seq":7}`: {Name: CommandInputWritten, LoopID: "l", TurnID: "t", Input: "yes\n", Bytes: 4, InputSeq: 7},
		`{"name":"input_written","loop_id":"l","turn_id":"t","hidden":true,"bytes":4,"input_seq":7}`:   {Name: CommandInputWritten, LoopID: "l", TurnID: "t", Hidden: true, Bytes: 4, InputSeq: 7},
		`{"name":"input_written","loop_id":"l","turn_id":"t","input_seq":7,"reason":"timeout"}`:        {Name: CommandInputWritten, LoopID: "l", TurnID: "t", InputSeq: 7, Reason: InputTimedOut},
		`{"name":"input_written","loop_id":"l","turn_id":"t","eof":true,"input_seq":7,"reason":"turn_ended"}`: {Name: CommandInputWritten, LoopID: "l", TurnID: "t", EOF: true, InputSeq: 7,
			Reason: InputTurnEnded},
	}
	for in, want := range good {
		payload := `{"v":1,"kind":"command","command":` + in + at
		rec, err := DecodeRecord(3, []byte(payload))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if rec.Kind != KindCommand || !reflect.DeepEqual(*rec.Command, want) {
			t.Errorf("%s decodes to %+v, want %+v", in, rec.Command, want)
		}
		content, err := contentOf(rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendAt(content, rec.At)); got != payload {
			t.Errorf("re-encoded:\n%s\nwant\n%s", got, payload)
		}
	}
	bad := []string{
		`{"name":"input","turn_id":"t","bytes":4,"input_seq":7}`,
		`{"name":"input","turn_id":"t","bytes":4,"reason":"timeout"}`,
		`{"name":"input_written","turn_id":"t","bytes":4}`,
		`{"name":"input_written","input_seq":7,"bytes":4}`,
		`{"name":"input_written","turn_id":"t","input_seq":7,"bytes":-1}`,
		`{"name":"input_written","turn_id":"t","input_seq":7,"hidden":true,"input":"pw"}`,
		`{"name":"input_written","turn_id":"t","input_seq":7,"eof":true,"input":"x"}`,
		`{"name":"input_written","turn_id":"t","input_seq":7,"from":"cli"}`,
		`{"name":"input_written","turn_id":"t","input_seq":7,"reason":"lost"}`,
	}
	for _, in := range bad {
		_, err := DecodeRecord(3, []byte(`{"v":1,"kind":"command","command":`+in+at))
		if de := (*RecordDecodeError)(nil); !errors.As(err, &de) {
			t.Errorf("%s: %v, want *RecordDecodeError", in, err)
		}
	}
}
