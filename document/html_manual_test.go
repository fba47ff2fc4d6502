package document

import (
	"strings"
	"testing"
)

// TestHTMLListItemBlocks: code, a table, a heading or a list inside a list
// item keeps its lines and rows (html/5). The reader put a list item's
// blocks on the item's one line, so a step's command and its output
// (Sphinx's "the scope of an interactive prompt: >>> __name__
// '__main__'", DocBook's and AsciiDoc's programlisting after a step's
// sentence) and a javadoc member summary's table rows ran together. A
// paragraph stays on the item's line, as before; when the item's first
// text is such a block, its marker goes on that block's first line.
func TestHTMLListItemBlocks(t *testing.T) {
	t.Parallel()
	tests := []bodyText{
		{"code after a step",
			"<ul><li><p>the scope of an interactive prompt:</p>\n<div class=highlight><pre>&gt;&gt;&gt; __name__\n'__main__'\n</pre></div></li>\n" +
				"<li><p>a file argument:</p><pre>$ python3 hello.py\nHello, world!</pre></li></ul>",
			"- the scope of an interactive prompt:\n>>> __name__\n'__main__'\n\n- a file argument:\n$ python3 hello.py\nHello, world!"},
		{"text after the code",
			"<ol><li><p>For example,</p><pre class=programlisting>postgres -c a=yes\n  -c b=no</pre><p>Settings given this way override the file.</p></li><li>Next step.</li></ol>",
			"1. For example,\npostgres -c a=yes\n  -c b=no\n\n   Settings given this way override the file.\n2. Next step."},
		{"a section with a table",
			"<ul class=blockList><li class=blockList><section><h2>Method Summary</h2><table><tr><th>Type</th><th>Method</th></tr>" +
				"<tr><td>static void</td><td>main(String[] args)</td></tr></table></section></li></ul>",
			"- Method Summary\n\nType | Method\nstatic void | main(String[] args)"},
		{"the item's first text is code",
			"<ul><li><pre>make install</pre></li><li><div><table><tr><td>a</td><td>b</td></tr></table></div></li></ul>",
			"- make install\n\n- a | b"},
		{"a list inside a division",
			"<ul><li><p>Units:</p><div class=itemizedlist><ul><li>kB, MB</li><li>ms, s</li></ul></div><p>Rounded after conversion.</p></li></ul>",
			"- Units:\n  - kB, MB\n  - ms, s\n  Rounded after conversion."},
		{"paragraphs stay on the line",
			"<ul><li><p>One.</p><div class=paragraph><p>Two.</p></div></li></ul>",
			"- One. Two."},
	}
	bodyTexts(t, tests)
}

// TestHTMLNavBlocks: the blocks that move through a manual's pages are
// dropped as a reader view drops them (html/5): DocBook XSL's navigation
// header and footer (PostgreSQL's manual: "Prev | Up | Chapter 21. Client
// Authentication | Home | Next" above and below every page), whose links
// have keyboard shortcuts, and makeinfo's panel before each node ("Next:
// Preface, Up: Top [Contents][Index]", 111 times in R's single-page
// introduction), whose links name their relation. A paragraph with one
// such link, or with another link beside them, or with more than a few
// titles' worth of text, is read.
func TestHTMLNavBlocks(t *testing.T) {
	t.Parallel()
	tests := []bodyText{
		{"DocBook",
			"<div class=navheader><table width=\"100%\" summary=\"Navigation header\"><tr><th colspan=5>21.10. LDAP Authentication</th></tr>" +
				"<tr><td><a accesskey=p href=auth-peer.html>Prev</a> </td><td><a accesskey=u href=client-authentication.html>Up</a></td>" +
				"<th>Chapter 21. Client Authentication</th><td><a accesskey=h href=index.html>Home</a></td><td> <a accesskey=n href=auth-radius.html>Next</a></td></tr></table><hr></div>" +
				"<div class=sect1><h2>21.10. LDAP Authentication</h2><p>LDAP is used only to validate the user name.</p></div>" +
				"<div class=navfooter><hr><table><tr><td><a accesskey=p href=auth-peer.html>Prev</a></td><td><a accesskey=u href=c.html>Up</a></td>" +
				"<td><a accesskey=n href=auth-radius.html>Next</a></td></tr><tr><td>21.9. Peer Authentication</td><td><a accesskey=h href=index.html>Home</a></td>" +
				"<td>21.11. RADIUS Authentication</td></tr></table></div>",
			"21.10. LDAP Authentication\n\nLDAP is used only to validate the user name."},
		{"makeinfo",
			"<div class=\"chapter-level-extent\" id=\"Preface\"><div class=\"nav-panel\"><p>Next: <a href=\"#Intro\" accesskey=\"n\" rel=\"next\">Introduction</a>, " +
				"Previous: <a href=\"#Top\" accesskey=\"p\" rel=\"prev\">An Introduction to R</a>, Up: <a href=\"#Top\" accesskey=\"u\" rel=\"up\">An Introduction to R</a> " +
				"&nbsp; [<a href=\"#SEC_Contents\" title=\"Table of contents\" rel=\"contents\">Contents</a>][<a href=\"#Index\" title=\"Index\" rel=\"index\">Index</a>]</p></div>" +
				"<h2 class=\"unnumbered\">Preface</h2><p>This introduction to R is derived from notes.</p></div>",
			"Preface\n\nThis introduction to R is derived from notes."},
		{"one link", "<p>Read on in <a rel=next href=b.html>the next chapter</a>.</p>", "Read on in the next chapter."},
		{"another link beside them",
			"<p><a rel=prev href=a.html>Back</a> <a rel=next href=c.html>On</a> or <a href=https://example.org>the site</a></p>", "Back On or the site"},
		{"a paragraph",
			"<p><a accesskey=p href=a.html>Prev</a> " + longSentence + " <a accesskey=n href=c.html>Next</a></p>",
			"Prev " + longSentence + " Next"},
	}
	bodyTexts(t, tests)
}

const longSentence = "The planner estimates the cost of each plan from statistics gathered by ANALYZE, " +
	"chooses the cheapest, and executes it; when the statistics are stale the estimates can be far off, " +
	"so run ANALYZE after large changes to a table. Autovacuum does so on its own once enough rows have changed."

// TestHTMLTableFragment: a table saved on its own, without <html> or
// <body> (bash-doc's examples/INDEX.html: "<table border=1>" and its
// rows), and a snippet of one paragraph (jQuery UI's tooltip demo loads
// "<p><strong>…</strong></p>" into its page) are HTML; they were read as
// plain text, tags and all (precision 57% and 60% against pandoc). A
// .txt file that starts with <p> stays text; DocBook's tables in an XML
// document are not HTML.
func TestHTMLTableFragment(t *testing.T) {
	t.Parallel()
	page := "<table border=1>\n  <tr>\n    <th>Path</th>\n    <th>Description</th>\n  </tr>\n  <tr>\n    <td>./functions</td>\n    <td>Example functions</td>\n  </tr>\n</table>\n"
	d, err := ReadBytes(t.Context(), []byte(page), Options{Name: "INDEX.html"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Path | Description\n./functions | Example functions"; d.Format != "html" || d.Text != want {
		t.Errorf("read as %s: %q, want html and %q", d.Format, d.Text, want)
	}
	d, err = ReadBytes(t.Context(), []byte("<p><strong>This content was loaded via ajax.</strong></p>\n"), Options{Name: "content1.html"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "This content was loaded via ajax."; d.Format != "html" || d.Text != want {
		t.Errorf("read as %s: %q, want html and %q", d.Format, d.Text, want)
	}
	d, err = ReadBytes(t.Context(), []byte("<p>is how a paragraph starts; </p> ends it.\n"), Options{Name: "notes.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != "text" {
		t.Errorf("notes.txt read as %s, want text", d.Format)
	}
	// Without a name that says HTML, a fragment is not enough: a README
	// starting with <div align="center">…</div> is Markdown, read as text
	// with its lines.
	readme := "<div align=\"center\">\n<img src=\"logo.png\">\n</div>\n\n# Project\n\n- one\n- two\n"
	for _, name := range []string{"", "README.md", "stdin"} {
		d, err = ReadBytes(t.Context(), []byte(readme), Options{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if d.Format != "text" || !strings.Contains(d.Text, "- one\n- two") {
			t.Errorf("%q read as %s: %q, want text with its lines", name, d.Format, d.Text)
		}
	}
	if d, err = ReadBytes(t.Context(), []byte(readme), Options{Name: "README.html"}); err != nil || d.Format != "html" {
		t.Errorf("README.html read as %v (%v), want html", d, err)
	}
	for _, x := range []string{
		"<?xml version=\"1.0\"?>\n<article><table><tr><td>a</td></tr></table></article>",
		"<article xmlns=\"http://docbook.org/ns/docbook\"><table><tr><td>a</td></tr></table></article>",
		"<table><row><entry>a</entry></row></table>",
	} {
		if matchHTML([]byte(x), nil, 0) {
			t.Errorf("%q matched as HTML", x)
		}
	}
}

// bodyText is a case of the HTML reader: a page's body and its text.
type bodyText struct{ name, body, want string }

// bodyTexts reads each case's body inside <html><body> as HTML, in a
// parallel subtest named for it, and checks its text.
func bodyTexts(t *testing.T, tests []bodyText) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), []byte("<html><body>"+tt.body+"</body></html>"), Options{Format: "html"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Text != tt.want {
				t.Errorf("text\n%q\nwant\n%q", d.Text, tt.want)
			}
		})
	}
}
