package schema

import (
	"container/list"
	"sync"
)

// Cache keeps compiled schemas so a worker compiles each schema once. It
// is keyed by the source text and the options, and shares one *Schema
// between sources with the same fingerprint. Safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	size   int
	order  *list.List // front = most recently used; values are cacheKey
	bySrc  map[cacheKey]*list.Element
	schema map[cacheKey]*Schema
	byFP   map[string]*Schema
	refs   map[string]int // how many source keys share a fingerprint
}

type cacheKey struct {
	src  string
	opts string
}

// NewCache returns a cache holding at most size schemas (least recently
// used evicted first; size < 1 means 1).
func NewCache(size int) *Cache {
	if size < 1 {
		size = 1
	}
	return &Cache{
		size:   size,
		order:  list.New(),
		bySrc:  map[cacheKey]*list.Element{},
		schema: map[cacheKey]*Schema{},
		byFP:   map[string]*Schema{},
		refs:   map[string]int{},
	}
}

// Compile returns the cached schema for src and opts, compiling it on a
// miss. Options are part of the key, so the same text compiled under
// another draft or ref mapping is a different entry. Errors are not cached.
func (c *Cache) Compile(src []byte, opts ...Option) (*Schema, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	key := cacheKey{src: string(src), opts: o.key()}
	c.mu.Lock()
	if el, ok := c.bySrc[key]; ok {
		c.order.MoveToFront(el)
		s := c.schema[key]
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()

	s, err := Compile(src, opts...)
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.bySrc[key]; ok { // compiled concurrently
		c.order.MoveToFront(el)
		return c.schema[key], nil
	}
	if shared, ok := c.byFP[s.fingerprint]; ok {
		s = shared
	} else {
		c.byFP[s.fingerprint] = s
	}
	c.refs[s.fingerprint]++
	c.bySrc[key] = c.order.PushFront(key)
	c.schema[key] = s
	for c.order.Len() > c.size {
		old := c.order.Remove(c.order.Back()).(cacheKey)
		fp := c.schema[old].fingerprint
		delete(c.bySrc, old)
		delete(c.schema, old)
		if c.refs[fp]--; c.refs[fp] == 0 {
			delete(c.refs, fp)
			delete(c.byFP, fp)
		}
	}
	return s, nil
}

// Len reports how many sources are cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// key renders the options that change what a source compiles to.
func (o *options) key() string {
	k := string(o.draft) + "|" + o.file + "|" + o.file2URL
	if o.formatsOff {
		k += "|nofmt"
	}
	if o.forceSchema {
		k += "|schema"
	}
	if o.yamlHint {
		k += "|yaml"
	}
	for _, d := range o.refDirs {
		k += "|" + d.prefix + "=" + d.dir
	}
	return k
}
