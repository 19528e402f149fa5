package hub

import (
	"sync"
	"testing"
	"time"

	"looprig/rig/event"
)

// BenchmarkRawFanout is the baseline of BenchmarkPublishEphemeral and
// BenchmarkPublishEnduring: under one mutex, a non-blocking send of an
// envelope to each of n buffered channels (BufferSize), the first never
// read, the others drained by a goroutine each. No filters, no journal, no
// counting.
func BenchmarkRawFanout(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(itoa(n)+"subs", func(b *testing.B) {
			chs := make([]chan event.Envelope, n)
			done := make(chan struct{})
			var wg sync.WaitGroup
			for i := range chs {
				chs[i] = make(chan event.Envelope, BufferSize)
				if i == 0 {
					continue
				}
				wg.Go(func() {
					for {
						select {
						case <-chs[i]:
						case <-done:
							return
						}
					}
				})
			}
			var mu sync.Mutex
			env := event.Envelope{Session: "s", LoopID: "l", Event: event.OutputDelta{TurnID: "t", Text: "hello world"}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mu.Lock()
				env.At = time.Now()
				for _, ch := range chs {
					select {
					case ch <- env:
					default:
					}
				}
				mu.Unlock()
			}
			b.StopTimer()
			close(done)
			wg.Wait()
		})
	}
}
