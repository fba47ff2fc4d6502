package document

import (
	"maps"
	"slices"
	"testing"
)

// TestHTMLSegmentBreaks: a line break in the source between two Chinese
// or Japanese characters is no space (CSS Text 3 §4.1.2: a browser drops
// it), as xfig-doc's Japanese manual breaks its sentences across lines
// ("属性パネルには、\n線の太さ" read "…には、 線の太さ"). Between Latin
// words, beside Hangul, as spaces without a line break, or between two
// elements (debmake-doc's <dt> and <dd> in a list item), white space is
// one space as before; a break next to an inline tag is joined as one
// inside a text node is (html/4), a block's or a cell's end is not.
func TestHTMLSegmentBreaks(t *testing.T) {
	t.Parallel()
	page := "<html><head><meta charset=utf-8><title>属性の\n設定</title></head><body>\n" +
		"<p>属性パネルには、\n線の太さや色などの\r\n  描画パラメータを設定するための (属性ボタンと呼ぶ)\nボタン。</p>\n" +
		"<ul><li>ｶﾀｶﾅ\nｶﾀｶﾅ and\nLatin words</li>\n<li><p>灵活性</p>\n<p>许多选项</p></li></ul>\n" +
		"<p>한국어\n문장 と 漢字 漢字\t漢字</p>\n" +
		"<p>設定は<b>\n属性パネル</b>\nで行う。<a href=x>リンク</a>\n<i>の説明</i>\n\n<span>文</span>  \n  <span>字</span> <em>Latin</em>\n<em>漢字</em></p>\n" +
		"<table><tr><td>価格は<b>\n税込</b></td><td>千円</td></tr><tr><td><p>品名</p>\n<p>数量</p></td><td>三</td></tr></table></body></html>"
	d, err := ReadBytes(t.Context(), []byte(page), Options{Format: "html"})
	if err != nil {
		t.Fatal(err)
	}
	want := "属性パネルには、線の太さや色などの描画パラメータを設定するための (属性ボタンと呼ぶ) ボタン。\n\n" +
		"- ｶﾀｶﾅｶﾀｶﾅ and Latin words\n- 灵活性 许多选项\n\n한국어 문장 と 漢字 漢字 漢字\n\n" +
		"設定は属性パネルで行う。リンクの説明文字 Latin 漢字\n\n価格は税込 | 千円\n品名 数量 | 三"
	if d.Text != want {
		t.Errorf("text\n%q\nwant\n%q", d.Text, want)
	}
	if d.Meta.Title != "属性の設定" {
		t.Errorf("title %q, want 属性の設定", d.Meta.Title)
	}
	// A list item's paragraphs inside <pre>, flushed by a block in an
	// inline element: their ends stay spaces, never hardSpace's form feed.
	d, err = ReadBytes(t.Context(), []byte("<html><body><pre><ul><li><p>a</p><p>c</p><span><div>b</div></span></li></ul></pre></body></html>"), Options{Format: "html"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != "a  c\n\nb" {
		t.Errorf("text %q, want %q", d.Text, "a  c\n\nb")
	}
}

// TestHTMLNoframes: a frameset's <noframes> content (xfig-doc's manual:
// "Jump to <a href=...>no frame version</a>"), which HTML5 parses as raw
// text, is read as the markup it is, not as text with its tags; markup
// nested in it is not parsed twice.
func TestHTMLNoframes(t *testing.T) {
	t.Parallel()
	tests := []struct{ page, want string }{
		{"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.0 Frameset//EN\">\n<html><head><title>XFig User Manual</title></head>\n" +
			"<frameset cols=\"172,*\">\n  <frame src=\"a.html\">\n  <noframes>\n    Jump to <a href=\"contents.html\">no frame version</a>.\n  </noframes>\n</frameset></html>",
			"Jump to no frame version."},
		{"<html><body><p>Before.</p><noframes><h1>Title</h1><p>One &amp; two.</p></noframes><p>After.</p></body></html>",
			"Before.\n\nTitle\n\nOne & two.\n\nAfter."},
		{"<html><body><noframes>a <noframes><b>x</b></noframes> b</noframes></body></html>",
			"a <b>x</b>\n\nb"},
	}
	for _, tt := range tests {
		d, err := ReadBytes(t.Context(), []byte(tt.page), Options{Format: "html"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Text != tt.want {
			t.Errorf("text %q, want %q", d.Text, tt.want)
		}
	}
}

// TestReadersFollowWhatTheyHold pins the versions of the readers whose own
// text holds what the HTML, RTF or e-mail reader makes of a part (an e-mail's
// HTML body, an EPUB's chapters, an Outlook message's RTF body, a .docx's
// HTML or RTF chunk): when the inner reader's output changes, theirs
// does, and `resubmit --reread` must select their documents too. html/3
// went out without them; this fails until they are bumped with it.
func TestReadersFollowWhatTheyHold(t *testing.T) {
	t.Parallel()
	got := map[string]string{}
	for _, f := range Formats() {
		got[f.Name] = f.Version
	}
	for _, inner := range []struct {
		name, version string
		follow        map[string]string
	}{
		{"html", "5", map[string]string{"eml": "5", "emlx": "3", "epub": "4", "ole": "10", "tnef": "3", "docx": "8"}},
		{"rtf", "1", map[string]string{"ole": "10", "tnef": "3", "docx": "8"}},
		// An e-mail's MIME parts: an .emlx's message, a signed Outlook
		// message's S/MIME entity, a .docx's MHT chunk.
		{"eml", "5", map[string]string{"emlx": "3", "ole": "10", "docx": "8"}},
	} {
		if got[inner.name] != inner.version {
			t.Errorf("the %s reader is %s/%s, this test knows %s/%s: bump the version of each of %v "+
				"(their text holds %s's), then set them here", inner.name, inner.name, got[inner.name],
				inner.name, inner.version, slices.Sorted(maps.Keys(inner.follow)), inner.name)
			continue
		}
		for name, v := range inner.follow {
			if got[name] != v {
				t.Errorf("%s/%s, want %s/%s (through %s/%s)", name, got[name], name, v, inner.name, inner.version)
			}
		}
	}
}
