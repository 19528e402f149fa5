package search

import (
	"container/list"
	"hash/maphash"
	"sync"
	"unsafe"
)

// BlockCache keeps blocks a search decompressed, for the next searches of
// a process that searches again and again: the TUI's search view, where
// each keystroke searches, and a query one character longer reads a
// subset of the blocks the one before it read (its trigrams are theirs
// and more). What a hit costs is its block's decompression (most of a
// rare word's search), and a block read by the keystroke before costs a
// scan. A command searches once and keeps none.
//
// A cached block is known by its id and a hash of its stored bytes: a
// block that grew since (a session's last block takes the lines of its
// next catch-up), or the block of that id in a rebuilt index, is not the
// cached one. The cache is bounded by the bytes it holds, the blocks used
// least recently dropped first. It is safe for concurrent use, and may
// outlive the Index that filled it: the text it hands out is its own.
type BlockCache struct {
	mu    sync.Mutex
	max   int
	size  int
	seed  maphash.Seed
	byID  map[uint64]*list.Element
	order list.List // of *cachedBlock, the most recently used first
}

// cachedBlock is a decompressed block: its text and its lines' ranges
// there. Neither is written once cached.
type cachedBlock struct {
	id   uint64
	sum  uint64 // of the stored block
	raw  []byte
	refs []lineRef
}

func (c *cachedBlock) bytes() int {
	return len(c.raw) + len(c.refs)*int(unsafe.Sizeof(lineRef{}))
}

// NewBlockCache returns a cache of at most maxBytes of decompressed
// blocks (their text and their lines' ranges).
func NewBlockCache(maxBytes int) *BlockCache {
	return &BlockCache{max: maxBytes, seed: maphash.MakeSeed(), byID: make(map[uint64]*list.Element)}
}

// sum is the hash a stored block is known by.
func (c *BlockCache) sum(stored []byte) uint64 {
	return maphash.Bytes(c.seed, stored)
}

// get returns block id whose stored bytes hash to sum, if cached.
func (c *BlockCache) get(id, sum uint64) (*cachedBlock, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	b := e.Value.(*cachedBlock)
	if b.sum != sum {
		return nil, false
	}
	c.order.MoveToFront(e)
	return b, true
}

// put caches a copy of block id (raw, refs), replacing another version
// of it, and drops the least recently used blocks beyond the bound.
func (c *BlockCache) put(id, sum uint64, raw []byte, refs []lineRef) {
	b := &cachedBlock{id: id, sum: sum, raw: append([]byte(nil), raw...), refs: append([]lineRef(nil), refs...)}
	if b.bytes() > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.size -= e.Value.(*cachedBlock).bytes()
		c.order.Remove(e)
	}
	c.byID[id] = c.order.PushFront(b)
	c.size += b.bytes()
	for c.size > c.max {
		e := c.order.Back()
		old := e.Value.(*cachedBlock)
		c.order.Remove(e)
		delete(c.byID, old.id)
		c.size -= old.bytes()
	}
}

// Len is the number of blocks cached.
func (c *BlockCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
