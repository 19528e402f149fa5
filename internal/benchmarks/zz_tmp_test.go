package benchmarks

import (
	"testing"
	"time"

	"looprig/rig"
	"looprig/search"
)

func BenchmarkTmpSearchInProc(b *testing.B) {
	sessions, lines := searchSize()
	fx := newSearchFixture(b, sessions, lines)
	searchInProcess(b, fx, "eaddrinuse")
	q, _ := search.ParseQuery("eaddrinuse")
	var tl, to, tu, ts time.Duration
	b.ResetTimer()
	for range b.N {
		st := openStore(b, fx.dir)
		t0 := time.Now()
		infos, _ := rig.ListSessions(bg, st)
		t1 := time.Now()
		ix, err := search.Open(bg, st, search.Options{})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		ix.Update(bg, search.SessionsOf(infos), nil)
		t3 := time.Now()
		ix.Search(bg, q, search.Filter{Kinds: []search.Kind{search.KindOutput}}, func(search.Hit) error { return nil })
		t4 := time.Now()
		ix.Close()
		st.Close()
		tl += t1.Sub(t0)
		to += t2.Sub(t1)
		tu += t3.Sub(t2)
		ts += t4.Sub(t3)
	}
	n := time.Duration(b.N)
	b.Logf("list %v open %v update %v search %v", tl/n, to/n, tu/n, ts/n)
}
