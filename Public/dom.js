// DOM helpers. Data from the store (keys, values) only ever becomes text nodes
// or attribute values: nothing here parses markup.

/** el('button', {class: 'x', onclick: f, 'data-testid': 't'}, 'text', child) */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (name === 'class') node.className = value;
    else if (name in node && typeof value !== 'string') node[name] = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function formatBytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '?';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = n / 1024, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** Local time as `2026-11-20 10:00:05` (compact: without seconds). */
export function formatTime(iso, compact = false) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n) => String(n).padStart(2, '0');
  const day = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
  return `${day} ${p(d.getHours())}:${p(d.getMinutes())}` + (compact ? '' : `:${p(d.getSeconds())}`);
}

export async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // clipboard API needs a secure context; fall back to a hidden textarea
    const area = el('textarea', { class: 'offscreen' });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
  if (button) {
    const old = button.textContent;
    button.textContent = 'Copied';
    setTimeout(() => { button.textContent = old; }, 1000);
  }
}

/** A modal confirmation; resolves to true on "confirm". */
export function confirmDialog(message, confirmLabel = 'Delete') {
  return new Promise((resolve) => {
    const dialog = el('dialog', { class: 'dialog', 'data-testid': 'confirm-dialog' },
      el('p', {}, message),
      el('div', { class: 'actions' },
        el('button', { type: 'button', 'data-testid': 'cancel', onclick: () => done(false) }, 'Cancel'),
        el('button', { type: 'button', class: 'danger', 'data-testid': 'confirm', onclick: () => done(true) }, confirmLabel)));
    const done = (value) => { dialog.close(); dialog.remove(); resolve(value); };
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A status line at the bottom of the page. */
export function toast(message, kind = 'info') {
  const box = document.getElementById('toast');
  if (!box) return;
  box.textContent = message;
  box.dataset.kind = kind;
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, kind === 'error' ? 8000 : 3000);
}
