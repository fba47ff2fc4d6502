package document

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/width"
)

func init() {
	Register(Format{
		Name:       "html",
		MediaType:  "text/html",
		Extensions: []string{".html", ".htm", ".xhtml", ".xht", ".shtml"},
		Version:    "5", // 2: self-closed raw-text elements (<iframe/>) end where they stand; fragments and CGI headers; 3: a line break between two Chinese or Japanese characters is no space (CSS Text 3 segment breaks), <noframes> markup read as markup; 4: such a break next to an inline tag too (漢字<b>\n漢字</b>); 5: code, tables, headings and lists in a list item keep their lines, a manual's Prev/Next navigation blocks (rel, accesskey) dropped, a fragment that starts with a table or closes its first HTML-only tag is HTML
		Match:      matchHTML,
		MatchNamed: matchHTMLNamed,
		Priority:   50,
		Decoder:    DecoderFunc(decodeHTML),
	})
}

// htmlHead is the start of a page as the matchers read it: decoded from
// UTF-16 when a BOM says so, without a BOM, leading white space or a CGI
// header, in lower case; nil when it does not start with a tag.
func htmlHead(head []byte) []byte {
	if e, name, _ := charset.DetermineEncoding(head, ""); name == "utf-16le" || name == "utf-16be" {
		if s, err := e.NewDecoder().Bytes(head[:len(head)&^1]); err == nil {
			head = s
		}
	}
	h := bytes.ToLower(bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n"))
	h, _ = cutCGIHeader(h)
	if len(h) == 0 || h[0] != '<' {
		return nil
	}
	return h
}

// matchHTML recognises a page by its first markup: a doctype, an <html>,
// <head> or <body> tag, or an XHTML document, in any BOM-marked encoding.
func matchHTML(head []byte, _ io.ReaderAt, _ int64) bool {
	h := htmlHead(head)
	if h == nil {
		return false
	}
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body"} {
		if bytes.HasPrefix(h, []byte(p)) {
			return true
		}
	}
	// <?xml …?>, comments, then the root: look a little further in.
	h = h[:min(len(h), 1024)]
	if bytes.Contains(h, []byte("<html")) || bytes.Contains(h, []byte("<!doctype html")) {
		return true
	}
	// A fragment (a page's body saved on its own, an include): markup
	// that starts with a tag and uses elements only HTML has. XML
	// vocabularies (DocBook, SVG) share <title> and <table>, not these.
	n := 0
	for _, t := range fragmentTags {
		if bytes.Contains(h, []byte(t)) {
			n++
		}
	}
	return n >= 2
}

// matchHTMLNamed is html's Format.MatchNamed, for a file named as a page
// (.html): a fragment that starts with an element only HTML has and
// closes it (a snippet a page loads into itself: "<p><strong>Loaded via
// ajax.</strong></p>"), or with a table of HTML's rows and cells (an
// index of files generated into a page, bash's examples/INDEX.html).
// XML vocabularies' tables use <row> and <entry>, and their documents
// start with their root or <?xml. Without the name this is too little:
// Markdown often starts with <div align="center">…</div>, and a text may
// start with a tag.
func matchHTMLNamed(head []byte) bool {
	h := htmlHead(head)
	if h == nil {
		return false
	}
	h = h[:min(len(h), 1024)]
	for _, t := range fragmentEnds {
		if bytes.HasPrefix(h, []byte(t.start)) && bytes.Contains(h, []byte(t.end)) {
			return true
		}
	}
	return bytes.HasPrefix(h, []byte("<table")) && containsAny(h, "<tr>", "<tr ") && containsAny(h, "<td>", "<td ", "<th>", "<th ")
}

// containsAny reports whether b holds one of subs.
func containsAny(b []byte, subs ...string) bool {
	for _, s := range subs {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// fragmentTags are start tags of elements only HTML has.
var fragmentTags = []string{"<p>", "<p ", "<div", "<h1", "<h2", "<h3", "<br>", "<br/", "<a href", "<ul>", "<li>", "<span"}

// fragmentEnds pairs each of fragmentTags but <br>'s (a void element)
// with its element's end tag: "<a href" with "</a>".
var fragmentEnds = func() (pairs []struct{ start, end string }) {
	for _, t := range fragmentTags {
		name := strings.TrimSuffix(strings.Fields(t[1:])[0], ">")
		if name != "br" && name != "br/" {
			pairs = append(pairs, struct{ start, end string }{t, "</" + name + ">"})
		}
	}
	return pairs
}()

// cutCGIHeader drops a leading CGI header block ("Content-type:
// text/html" and a blank line), which man2html writes before the page
// (Debian's bash.html): it is no part of the page's text. ok reports that
// there was one.
func cutCGIHeader(b []byte) (rest []byte, ok bool) {
	if len(b) < 13 || !bytes.EqualFold(b[:13], []byte("content-type:")) {
		return b, false
	}
	for _, sep := range []string{"\r\n\r\n", "\n\n"} {
		if i := bytes.Index(b[:min(len(b), 1024)], []byte(sep)); i >= 0 {
			return bytes.TrimLeft(b[i+len(sep):], " \t\r\n"), true
		}
	}
	return b, false
}

func decodeHTML(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	contentType := ""
	if rest, ok := cutCGIHeader(b); ok {
		// The header names the page's charset, as an HTTP response does.
		line, _, _ := bytes.Cut(b, []byte("\n"))
		contentType = strings.TrimSpace(string(line[len("content-type:"):]))
		b = rest
	}
	return htmlDocument(b, contentType, opts.Limits, true)
}

// htmlDocument converts a page to a document; contentType is the charset
// hint from outside (an e-mail part's header), mainOnly picks the main
// content as a reader view would.
func htmlDocument(b []byte, contentType string, lim Limits, mainOnly bool) (*Document, error) {
	cr, err := charset.NewReader(bytes.NewReader(b), contentType)
	if err != nil {
		return nil, fmt.Errorf("%w: charset: %v", ErrCorrupt, err)
	}
	if selfClosedRaw.Match(b) {
		u, err := io.ReadAll(cr)
		if err != nil {
			return nil, fmt.Errorf("%w: charset: %v", ErrCorrupt, err)
		}
		cr = bytes.NewReader(closeSelfClosedRaw(u))
	}
	root, err := html.Parse(cr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	doc := &Document{}
	htmlMeta(root, &doc.Meta)
	body := findElement(root, atom.Body)
	if body == nil {
		body = root
	}
	start := body
	if mainOnly {
		hideNavBlocks(body)
		start = mainContent(body)
	}
	w := newTextWriter(lim)
	hw := &htmlWriter{w: w}
	hw.node(start)
	hw.flush()
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}

// selfClosedRaw finds an XHTML-style self-closed element whose content
// HTML reads as raw text: <iframe …/>, <script src=…/>, <title/>. Such a
// tag is how XHTML (EPUB chapters, pages made by XSLT or templates) writes
// an empty element, but the HTML parser ignores the slash and reads the
// rest of the page as that element's text, so the page came out empty.
var selfClosedRaw = regexp.MustCompile(`(?i)<(iframe|script|style|textarea|title|noembed|noframes|noscript|xmp)\b[^>]*/>`)

// rawTextTags are the elements selfClosedRaw names.
var rawTextTags = map[string]bool{"iframe": true, "script": true, "style": true, "textarea": true, "title": true, "noembed": true, "noframes": true, "noscript": true, "xmp": true}

// closeSelfClosedRaw rewrites each self-closed raw-text element as an
// empty one (<iframe …></iframe>), as XHTML means it; every other byte is
// kept as it was.
func closeSelfClosedRaw(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b) + 64)
	z := html.NewTokenizer(bytes.NewReader(b))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out.Bytes()
		}
		raw := z.Raw()
		if tt != html.SelfClosingTagToken {
			out.Write(raw)
			continue
		}
		out.Write(raw) // copied before TagName, which lower-cases the buffer in place
		name, _ := z.TagName()
		if rawTextTags[string(name)] {
			z.NextIsNotRawText()
			out.Truncate(out.Len() - len(raw))
			out.Write(bytes.TrimRight(bytes.TrimSuffix(raw, []byte("/>")), " \t\r\n/"))
			out.WriteString("></" + string(name) + ">")
		}
	}
}

// htmlMeta reads the title, language and the author and description
// <meta> tags.
func htmlMeta(n *html.Node, m *Metadata) {
	for c := range n.Descendants() {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.Html:
			setOnce(&m.Language, htmlAttr(c, "lang"))
		case atom.Title:
			setOnce(&m.Title, collapseSpace(nodeText(c)))
		case atom.Meta:
			switch strings.ToLower(htmlAttr(c, "name")) {
			case "author":
				setOnce(&m.Author, htmlAttr(c, "content"))
			case "description":
				setOnce(&m.Subject, htmlAttr(c, "content"))
			}
		}
	}
}

func htmlAttr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func findElement(n *html.Node, a atom.Atom) *html.Node {
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && c.DataAtom == a {
			return c
		}
	}
	return nil
}

// nodeText is the text of a subtree, unfiltered.
func nodeText(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return joinSegments(b.String())
}

// dropped are elements whose content is never the document's text.
var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Nav: true,
	atom.Aside: true, atom.Form: true, atom.Button: true, atom.Select: true, atom.Input: true,
	atom.Textarea: true, atom.Iframe: true, atom.Svg: true, atom.Canvas: true, atom.Head: true,
	atom.Object: true, atom.Embed: true, atom.Dialog: true, atom.Menu: true,
}

// boilerplateRoles and boilerplateNames mark navigation and page chrome
// by ARIA role or by a class or id word.
var (
	boilerplateRoles = map[string]bool{"navigation": true, "banner": true, "contentinfo": true, "complementary": true, "search": true, "menu": true, "menubar": true, "dialog": true, "alertdialog": true}
	boilerplateNames = map[string]bool{"nav": true, "navbar": true, "navigation": true, "menu": true, "sidebar": true, "breadcrumb": true, "breadcrumbs": true, "cookie": true, "cookies": true, "cookie-banner": true, "share": true, "social": true, "advert": true, "ads": true, "advertisement": true, "skip-link": true, "comments": true, "related": true, "pagination": true}
)

// skipped reports whether an element is page chrome rather than content.
// Headers and footers are chrome at the page level only: an article's own
// header holds its title.
func skipped(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return n.Type == html.CommentNode
	}
	if dropped[n.DataAtom] {
		return true
	}
	if _, hidden := attrOK(n, "hidden"); hidden || htmlAttr(n, "aria-hidden") == "true" {
		return true
	}
	if st := strings.ReplaceAll(strings.ToLower(htmlAttr(n, "style")), " ", ""); strings.Contains(st, "display:none") || strings.Contains(st, "visibility:hidden") {
		return true
	}
	if boilerplateRoles[strings.ToLower(htmlAttr(n, "role"))] {
		return true
	}
	for _, w := range strings.Fields(strings.ToLower(htmlAttr(n, "class") + " " + htmlAttr(n, "id"))) {
		if boilerplateNames[w] {
			// A class name alone is a weak sign (a restaurant's "menu" is its
			// content): only a block made mostly of links is dropped.
			return linkDense(n)
		}
	}
	if n.DataAtom == atom.Header || n.DataAtom == atom.Footer {
		for p := n.Parent; p != nil; p = p.Parent {
			if p.DataAtom == atom.Article || p.DataAtom == atom.Main || p.DataAtom == atom.Section || p.DataAtom == atom.Td {
				return false
			}
		}
		return true
	}
	return false
}

// linkDense reports whether most of a block's text is link text, as in
// navigation, share bars and lists of related pages.
func linkDense(n *html.Node) bool {
	var all, links int
	for c := range n.Descendants() {
		if c.Type != html.TextNode {
			continue
		}
		l := len(strings.TrimSpace(c.Data))
		all += l
		for p := c.Parent; p != nil && p != n; p = p.Parent {
			if p.DataAtom == atom.A {
				links += l
				break
			}
		}
	}
	return all == 0 || links*2 >= all
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// navRels are the link types (HTML 4's and HTML's rel values) that name
// a page's place in a series of pages: next, previous, up, the first, the
// contents, the index.
var navRels = map[string]bool{"prev": true, "previous": true, "next": true, "up": true, "first": true, "last": true,
	"start": true, "begin": true, "end": true, "top": true, "home": true, "contents": true, "toc": true, "index": true}

// navLink reports whether n is a link that moves through the pages of a
// manual: its rel is one of navRels, or it has a keyboard shortcut
// (accesskey: "p", "n", "u" on DocBook's and makeinfo's Prev, Next, Up).
func navLink(n *html.Node) bool {
	if n.Type != html.ElementNode || n.DataAtom != atom.A {
		return false
	}
	if _, ok := attrOK(n, "href"); !ok {
		return false
	}
	if strings.TrimSpace(htmlAttr(n, "accesskey")) != "" {
		return true
	}
	for _, r := range strings.Fields(strings.ToLower(htmlAttr(n, "rel"))) {
		if navRels[r] {
			return true
		}
	}
	return false
}

// navBlockText bounds the text outside the links of a navigation block:
// the titles of the pages it links to ("Chapter 21. Client
// Authentication"), not a paragraph.
const navBlockText = 200

// hideNavBlocks marks hidden the blocks that only move through a manual's
// pages, as a reader view drops them: DocBook's navigation header and
// footer (a table of Prev, Up, Home, Next and the neighbours' titles),
// makeinfo's panel above each node ("Next: …, Previous: …, Up: …
// [Contents][Index]"), repeated on every page or before every section
// and no part of its text. Such a block is the nearest paragraph, list,
// table or division around a link of navRels or with an accesskey,
// holding at least two such links, no other link and little other text;
// the page's elements (<body>, <main>, <article>) are never one.
func hideNavBlocks(body *html.Node) {
	seen := map[*html.Node]bool{}
	for a := range body.Descendants() {
		if !navLink(a) {
			continue
		}
		var blk *html.Node
		for p := a.Parent; p != nil && p != body; p = p.Parent {
			if p.Type == html.ElementNode && (p.DataAtom == atom.P || p.DataAtom == atom.Div || p.DataAtom == atom.Table ||
				p.DataAtom == atom.Ul || p.DataAtom == atom.Ol || p.DataAtom == atom.Center) {
				blk = p
				break
			}
			if p.DataAtom == atom.Main || p.DataAtom == atom.Article || p.DataAtom == atom.Section {
				break
			}
		}
		if blk == nil || seen[blk] {
			continue
		}
		seen[blk] = true
		if navBlock(blk) {
			// hidden, as the page could have said itself: skipped drops
			// it wherever it is looked at (mainContent, the writer).
			blk.Attr = append(blk.Attr, html.Attribute{Key: "hidden"})
		}
	}
}

// navBlock reports whether n holds two links of navLink or more, no other
// link and at most navBlockText bytes of other text.
func navBlock(n *html.Node) bool {
	nav, other := 0, 0
	var walk func(*html.Node, bool) bool
	walk = func(c *html.Node, inLink bool) bool {
		switch {
		case c.Type == html.TextNode && !inLink:
			other += nonSpaceLen(c.Data)
			if other > navBlockText {
				return false
			}
		case c.Type == html.ElementNode && c.DataAtom == atom.A:
			if _, ok := attrOK(c, "href"); ok {
				if !navLink(c) {
					return false
				}
				nav++
				inLink = true
			}
		}
		for d := c.FirstChild; d != nil; d = d.NextSibling {
			if !walk(d, inLink) {
				return false
			}
		}
		return true
	}
	return walk(n, false) && nav >= 2
}

// mainContent picks the page's main content as a reader view does: the
// largest <main>, <article> or role=main element when it holds most of the
// page's visible text, else the whole body (so that a page without such
// markup, an invoice or a letter, loses nothing).
func mainContent(body *html.Node) *html.Node {
	total := visibleLen(body)
	var best *html.Node
	bestLen := 0
	for c := range body.Descendants() {
		if c.Type != html.ElementNode || !(c.DataAtom == atom.Main || c.DataAtom == atom.Article || htmlAttr(c, "role") == "main") {
			continue
		}
		if l := visibleLen(c); l > bestLen {
			best, bestLen = c, l
		}
	}
	if best != nil && bestLen*2 >= total {
		return best
	}
	return body
}

// nonSpaceLen is the length in bytes of s without its white space.
func nonSpaceLen(s string) int {
	n := 0
	for i, r := range s {
		if !unicode.IsSpace(r) {
			_, w := utf8.DecodeRuneInString(s[i:]) // an invalid byte counts as the byte it is
			n += w
		}
	}
	return n
}

// visibleLen counts the non-space text bytes a reader would keep.
func visibleLen(n *html.Node) int {
	if skipped(n) {
		return 0
	}
	if n.Type == html.TextNode {
		return nonSpaceLen(n.Data)
	}
	l := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		l += visibleLen(c)
	}
	return l
}

// htmlWriter renders a tree as blocks: paragraphs, list items with their
// markers, table rows with cells joined by cellSep, preformatted text kept.
type htmlWriter struct {
	w      *textWriter
	inline strings.Builder
	pre    int
	lists  []int // per open list: next number, or -1 for bullets
	// noframes is set while a <noframes> element's markup is read.
	noframes bool
	// prefix is a list item's marker waiting for the item's first line,
	// when that line is a block of its own (code, a heading, a row).
	prefix string
}

// blockAtoms end the running line before and after them.
var blockAtoms = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Ul: true, atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Table: true, atom.Tr: true,
	atom.Blockquote: true, atom.Pre: true, atom.Section: true, atom.Article: true, atom.Main: true, atom.Header: true,
	atom.Footer: true, atom.Address: true, atom.Figure: true, atom.Figcaption: true, atom.Hr: true, atom.Center: true,
	atom.Caption: true, atom.Fieldset: true, atom.Details: true, atom.Summary: true, atom.Body: true, atom.Html: true,
}

func (hw *htmlWriter) flush() {
	s := hw.inline.String()
	hw.inline.Reset()
	if hw.pre == 0 {
		s = collapseSpace(joinSegments(s))
	} else {
		// A list item's blocks inside <pre> (<li><p>a</p><p>b</p>…) left
		// their ends here: spaces, as before hardSpace.
		s = strings.ReplaceAll(s, hardSpace, " ")
	}
	if hw.prefix != "" && strings.TrimSpace(s) != "" {
		s = hw.takePrefix() + strings.TrimLeft(s, "\n")
	}
	hw.w.block(s)
}

func (hw *htmlWriter) node(n *html.Node) {
	if skipped(n) {
		return
	}
	switch n.Type {
	case html.TextNode:
		// Raw: segment breaks are joined over the whole line when it is
		// written (flush), since a break between two Chinese characters
		// may lie next to an inline tag (漢字<b>\n漢字</b>).
		hw.inline.WriteString(n.Data)
		return
	case html.ElementNode:
	default:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			hw.node(c)
		}
		return
	}
	switch n.DataAtom {
	case atom.Br:
		if hw.pre > 0 {
			hw.inline.WriteString("\n")
		} else {
			hw.flushLine()
		}
		return
	case atom.Table:
		hw.flush()
		hw.table(n)
		return
	case atom.Td, atom.Th:
		if hw.pre > 0 {
			hw.inline.WriteString(" ")
		} else {
			hw.inline.WriteString(hardSpace)
		}
	case atom.Noframes:
		if hw.noframesMarkup(n) {
			return
		}
	}
	block := blockAtoms[n.DataAtom]
	if block {
		hw.flush()
	}
	switch n.DataAtom {
	case atom.Pre:
		hw.pre++
		defer func() { hw.pre-- }()
	case atom.Ul:
		hw.lists = append(hw.lists, -1)
		defer hw.endList()
	case atom.Ol:
		start := 1
		if s, err := strconv.Atoi(htmlAttr(n, "start")); err == nil {
			start = s
		}
		hw.lists = append(hw.lists, start)
		defer hw.endList()
	case atom.Li:
		hw.item(n)
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		hw.node(c)
	}
	if block {
		hw.flush()
	}
}

// noframesMarkup reads a <noframes> element's content as the page it is
// for browsers without frames (a frameset's only text: "Jump to <a
// href=contents.html>no frame version</a>"). HTML5 parses it as raw text,
// markup and all, which was read as text, tags included. Markup inside
// that markup is not parsed again (its size would bound nothing).
func (hw *htmlWriter) noframesMarkup(n *html.Node) bool {
	c := n.FirstChild
	if hw.noframes || c == nil || c != n.LastChild || c.Type != html.TextNode || !strings.Contains(c.Data, "<") {
		return false
	}
	nodes, err := html.ParseFragment(strings.NewReader(c.Data), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		return false
	}
	hw.noframes = true
	defer func() { hw.noframes = false }()
	hw.flush()
	for _, c := range nodes {
		hw.node(c)
	}
	hw.flush()
	return true
}

// endList closes a list; the outermost one ends its run of lines.
func (hw *htmlWriter) endList() {
	hw.lists = hw.lists[:len(hw.lists)-1]
	if len(hw.lists) == 0 {
		hw.w.endLines()
	}
}

// flushLine ends a line inside a block (a <br>): the text so far becomes
// its own line.
func (hw *htmlWriter) flushLine() {
	s := collapseSpace(joinSegments(hw.inline.String()))
	hw.inline.Reset()
	if hw.prefix != "" && strings.TrimSpace(s) != "" {
		s = hw.takePrefix() + s
	}
	hw.w.line(s)
}

// item writes a list item: its marker, its own text on one line, nested
// lists below it.
func (hw *htmlWriter) item(n *html.Node) {
	depth := len(hw.lists)
	marker := "-"
	if depth > 0 && hw.lists[depth-1] >= 0 {
		marker = strconv.Itoa(hw.lists[depth-1]) + "."
		hw.lists[depth-1]++
	}
	indent := strings.Repeat("  ", max(depth-1, 0))
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.DataAtom == atom.Ul || c.DataAtom == atom.Ol || c.DataAtom == atom.Table) {
			hw.itemLine(indent, &marker)
			hw.node(c)
			continue
		}
		if c.Type == html.ElementNode && blockAtoms[c.DataAtom] && holdsStructure(c) {
			// Code, a table, a heading or a list inside an item (a step's
			// command, a javadoc member's summary table) keeps its lines
			// and rows: flattened onto the item's line, ">>> x" and its
			// output, or a table's rows, ran together. The marker goes on
			// the first line written when the item has no text before it.
			if strings.TrimSpace(hw.inline.String()) != "" {
				hw.itemLine(indent, &marker)
			} else {
				hw.inline.Reset()
				hw.prefix = indent + marker + " "
			}
			hw.node(c)
			if hw.prefix == "" {
				marker = strings.Repeat(" ", len(marker))
			}
			hw.prefix = ""
			continue
		}
		if c.Type == html.ElementNode && blockAtoms[c.DataAtom] {
			// A paragraph inside an item stays on the item's line.
			inlineText(&hw.inline, c)
			hw.inline.WriteString(hardSpace)
			continue
		}
		hw.node(c)
	}
	hw.itemLine(indent, &marker)
}

// structureAtoms are the elements whose lines or rows a list item's text
// keeps: flattened onto the item's line they would run together.
var structureAtoms = map[atom.Atom]bool{
	atom.Pre: true, atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Dl: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// holdsStructure reports whether n is or holds, visibly, an element of
// structureAtoms.
func holdsStructure(n *html.Node) bool {
	if skipped(n) {
		return false
	}
	if n.Type == html.ElementNode && structureAtoms[n.DataAtom] {
		return true
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if holdsStructure(c) {
			return true
		}
	}
	return false
}

// takePrefix returns the pending list marker (see item) and clears it.
func (hw *htmlWriter) takePrefix() string {
	p := hw.prefix
	hw.prefix = ""
	return p
}

func (hw *htmlWriter) itemLine(indent string, marker *string) {
	s := collapseSpace(joinSegments(hw.inline.String()))
	hw.inline.Reset()
	if s == "" {
		return
	}
	// An outer item's marker still pending (its first line a nested
	// list's) is dropped, as for a list nested first in an item.
	hw.prefix = ""
	hw.w.line(indent + *marker + " " + s)
	*marker = strings.Repeat(" ", len(*marker))
}

// inlineText appends a subtree's kept text to b, blocks and line breaks
// as spaces; segment breaks are left for the caller to join over the
// whole text (joinSegments).
func inlineText(b *strings.Builder, n *html.Node) {
	if skipped(n) {
		return
	}
	if n.Type == html.TextNode {
		b.WriteString(n.Data)
		return
	}
	if n.Type == html.ElementNode && (n.DataAtom == atom.Br || n.DataAtom == atom.Td || n.DataAtom == atom.Th || blockAtoms[n.DataAtom]) {
		b.WriteString(hardSpace)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		inlineText(b, c)
	}
}

// table writes a table's rows, one per line, cells joined by cellSep; a
// table inside a cell is flattened into that cell's text. A table whose
// rows have one cell each is layout, not data: its content is read as
// blocks.
func (hw *htmlWriter) table(n *html.Node) {
	var rows [][]*html.Node
	layout := true // no row has two cells: the table only lays out blocks
	for c := range n.Descendants() {
		if c.Type != html.ElementNode || c.DataAtom != atom.Tr || skipped(c) || closestTable(c) != n {
			continue
		}
		var cells []*html.Node
		for td := c.FirstChild; td != nil; td = td.NextSibling {
			if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) && !skipped(td) {
				cells = append(cells, td)
			}
		}
		layout = layout && len(cells) <= 1
		rows = append(rows, cells)
	}
	for _, cells := range rows {
		if layout {
			// A layout table (an e-mail's frame around an invoice): its cells'
			// blocks, nested tables included, are read as a page's would be.
			for _, td := range cells {
				for c := td.FirstChild; c != nil; c = c.NextSibling {
					hw.node(c)
				}
				hw.flush()
			}
			continue
		}
		texts := make([]string, len(cells))
		for i, td := range cells {
			var cell strings.Builder
			inlineText(&cell, td)
			texts[i] = joinSegments(cell.String())
		}
		hw.w.row(hw.takePrefix(), texts)
	}
	if cap := findElement(n, atom.Caption); cap != nil && closestTable(cap) == n {
		hw.w.line(collapseSpace(nodeText(cap)))
	}
	hw.w.endLines()
}

func closestTable(n *html.Node) *html.Node {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.DataAtom == atom.Table {
			return p
		}
	}
	return nil
}

// hardSpace stands for a block's or a cell's end inside one line of
// text (a list item's paragraphs, a cell's): white space that
// collapseSpace makes a space and joinSegments never removes, unlike a
// line break of the source. A form feed, which HTML's text hardly holds.
const hardSpace = "\f"

// joinSegments applies CSS Text 3's rule for segment breaks (§4.1.2) to
// a line's text, across the elements it spans: white space holding a
// line break between two East Asian wide characters (Chinese, Japanese;
// not Hangul) is removed, as a browser removes it, unless it holds a
// hardSpace. Japanese and Chinese put no spaces between words, and their
// sentences are broken across the source's lines anywhere, next to an
// inline tag too (漢字<b>\n漢字</b>). Other white space is left for
// collapseSpace.
func joinSegments(s string) string {
	if !strings.ContainsAny(s, "\n\r") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	var prev rune // the last character before the white space
	start := -1   // where the white space began
	for i, r := range s {
		if unicode.IsSpace(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			ws := s[start:i]
			if !(prev != 0 && strings.ContainsAny(ws, "\n\r") && !strings.Contains(ws, hardSpace) && eastAsianWide(prev) && eastAsianWide(r)) {
				b.WriteString(ws)
			}
			start = -1
		}
		b.WriteRune(r)
		prev = r
	}
	if start >= 0 {
		b.WriteString(s[start:])
	}
	return b.String()
}

// eastAsianWide reports whether r is of East Asian Width F, W or H and not
// Hangul: a character CSS joins across a line break without a space.
func eastAsianWide(r rune) bool {
	if r < 0x1100 || unicode.Is(unicode.Hangul, r) {
		return false
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth, width.EastAsianHalfwidth:
		return true
	}
	return false
}
