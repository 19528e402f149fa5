package checkpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"looprig/rig/storage"
)

// packWriter streams chunks into one pack blob: PutBlob reads the other
// end of a pipe in a goroutine the writer owns, so a pack is never held
// in memory whole. A pack is only the chunks, one after the other; what
// is where is recorded by the trees that reference it. Bytes written and
// then not referenced (a file that changed while it was read) stay in the
// pack, unused.
type packWriter struct {
	pw   *io.PipeWriter
	buf  *bufio.Writer
	size int64
	done chan struct{}
	info storage.BlobInfo // once done: the pack's blob
	err  error            // once done
}

// errPackAborted ends a pack's put when the checkpoint gives up on it.
var errPackAborted = errors.New("checkpoint: pack abandoned")

func startPack(ctx context.Context, blobs storage.BlobStore) *packWriter {
	pr, pw := io.Pipe()
	p := &packWriter{pw: pw, buf: bufio.NewWriterSize(pw, 256<<10), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.info, p.err = blobs.PutBlob(ctx, pr)
		if p.err == nil {
			p.err = errPackAborted // unblocks a writer, should one remain
		}
		pr.CloseWithError(p.err)
		if p.err == errPackAborted {
			p.err = nil
		}
	}()
	return p
}

// write appends b and returns its offset in the pack.
func (p *packWriter) write(b []byte) (int64, error) {
	off := p.size
	n, err := p.buf.Write(b)
	p.size += int64(n)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: write pack: %w", err)
	}
	return off, nil
}

// close ends the pack and waits for its put.
func (p *packWriter) close() (storage.BlobInfo, error) {
	err := p.buf.Flush()
	if err == nil {
		err = p.pw.Close()
	} else {
		p.pw.CloseWithError(err)
	}
	<-p.done
	if p.err != nil {
		return storage.BlobInfo{}, fmt.Errorf("checkpoint: put pack: %w", p.err)
	}
	if err != nil {
		return storage.BlobInfo{}, fmt.Errorf("checkpoint: put pack: %w", err)
	}
	if p.info.Size != p.size {
		return storage.BlobInfo{}, fmt.Errorf("checkpoint: put pack: stored %d bytes of %d", p.info.Size, p.size)
	}
	return p.info, nil
}

// abort abandons the pack: its put fails and nothing is stored.
func (p *packWriter) abort() {
	p.pw.CloseWithError(errPackAborted)
	<-p.done
}
