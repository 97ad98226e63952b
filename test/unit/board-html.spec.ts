import { boardHref, cutForDisplay, html } from '../../lib/board/html';

describe('the board’s HTML templates', () => {
  it('escapes every interpolated value, in text and in attributes', () => {
    const hostile = `"><script>alert(1)</script><img src=x onerror='alert(1)'>\``;
    const markup = html`<td title="${hostile}">${hostile}</td>`.text;
    expect(markup).not.toMatch(/<script|<img|"\s*onerror|'alert/);
    expect(markup).toBe(
      '<td title="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&#96;">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&#96;</td>',
    );
  });

  it('keeps markup of nested templates, and escapes arrays item by item', () => {
    // Through another name: Prettier would lay out an \`html\` template as a page.
    const markup = html;
    expect(markup`<ul>${['<a>', markup`<li>b</li>`]}</ul>`.text).toBe('<ul>&lt;a&gt;<li>b</li></ul>');
  });

  it('percent-encodes every value of a link, so none becomes another scheme or origin', () => {
    expect(boardHref('/board', 'message', { id: 'javascript:alert(1)//x?y&z' })).toBe('/board/message?id=javascript%3Aalert%281%29%2F%2Fx%3Fy%26z');
    expect(boardHref('/board', '')).toBe('/board');
  });

  it('cuts long text at a code point', () => {
    expect(cutForDisplay('ab😀cd', 3)).toEqual({ shown: 'ab', cut: true });
    expect(cutForDisplay('abc', 3)).toEqual({ shown: 'abc', cut: false });
  });
});
