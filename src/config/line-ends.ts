// A config file's line ends and byte order mark, kept by an edit. The edits work on plain text (LF line ends, no BOM:
// yaml writes a document again that way, whatever it read), and their result is put back in the file's own form: a
// CRLF file (a Windows editor's) is written with CRLF on every line, the new ones included; an LF file stays LF; a
// file that starts with a UTF-8 byte order mark keeps it. A file with both kinds of line end is written with the one
// most of its lines have, CRLF only when more than half of its line ends are CRLF (VS Code's rule when it opens such a
// file, and what it writes on a save). A line end is a YAML line break, read the same either way: a value reads the
// same in both forms. A lone CR is left as it is, and so is a CR just before a CRLF (`key: sk-1\r\r\n`, a value that
// ends in a CR): with LF in place of that CRLF, its CR and the LF would read as one line break and the value lose its
// CR, so that line end stays CRLF in an LF file too.

/** How a config file writes its text: its line end, and whether it starts with a byte order mark. */
export interface TextForm {
  readonly eol: '\r\n' | '\n';
  readonly bom: boolean;
}

const BOM = '\uFEFF';

/** The form of `text`: its majority line end (LF when it has none), and its byte order mark. */
export function textFormOf(text: string): TextForm {
  let lf = 0;
  let crlf = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (i > 0 && text.charCodeAt(i - 1) === 13) crlf++;
    else lf++;
  }
  return { eol: crlf > lf ? '\r\n' : '\n', bom: text.startsWith(BOM) };
}

/** `text` without a byte order mark, with LF line ends (but after a CR: header): the text an edit works on. */
export const plainText = (text: string): string => (text.startsWith(BOM) ? text.slice(1) : text).replace(/(?<!\r)\r\n/g, '\n');

/** `text` (an edit's result) written in `form`: every line end `form.eol`, the byte order mark where the file had one. */
export function inTextForm(text: string, form: TextForm): string {
  const plain = plainText(text);
  return (form.bom ? BOM : '') + (form.eol === '\r\n' ? plain.replace(/(?<!\r)\n/g, '\r\n') : plain);
}
