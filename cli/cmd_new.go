package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
)

func cmdNew(e *env, args []string) int {
	fs := e.newFlags("new")
	fs.BoolVar(&e.json, "json", false, "JSON output")
	var pf profileFlags
	pf.add(fs)
	title := fs.String("title", "", "session title")
	seed := fs.String("seed", "", "directory copied into the new workspace")
	pos, _, dash, code, done := e.parse(fs, args, helpNew)
	if done {
		return code
	}
	if code, bad := e.wantNoArgs(pos, dash); bad {
		return code
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return e.fail(err)
	}
	p, err := cfg.Profile(pf.rig)
	if err != nil {
		return e.fail(err)
	}
	if p, err = pf.apply(e.cmd, p); err != nil {
		return e.fail(err)
	}
	st, err := e.openStore()
	if err != nil {
		return e.fail(err)
	}
	defer st.Close()
	r, err := defineRig(st, p, nil)
	if err != nil {
		return e.fail(err)
	}
	sig := notifyInterrupts()
	defer sig.stop()
	opts := []rig.SessionOption{rig.WithTitle(*title)}
	if *seed != "" {
		abs, err := filepath.Abs(*seed)
		if err != nil {
			return e.fail(usageErr(e.cmd, fmt.Sprintf("--seed %s: %v", *seed, err)))
		}
		opts = append(opts, rig.WithSeedSnapshot(abs))
	}
	s, err := r.NewSession(sig.ctx, opts...)
	if err != nil {
		return e.fail(err)
	}
	id, epoch, ws := s.SessionID().String(), s.Epoch(), s.Workspace()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		return e.fail(fmt.Errorf("session %s was created but did not shut down cleanly: %w", id, err))
	}
	if e.json {
		e.writeJSONLine(newObj().set("id", id).set("epoch", epoch).set("short_id", rig.ShortID(id)).
			set("title", *title).set("profile", p.Name).set("workspace", ws))
		return exitOK
	}
	fmt.Fprintln(e.stdout, id)
	fmt.Fprintf(e.stderr, "created session %s (profile %s, workspace %s)\nrun a turn in it: looprig %srun %s -- echo hello\n",
		rig.ShortID(id), textsafe.Line(p.Name), textsafe.Line(ws), e.globalArgs(), rig.ShortID(id))
	return exitOK
}
