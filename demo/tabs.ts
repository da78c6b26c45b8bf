/**
 * An accessible tab list (WAI-ARIA tabs pattern): click or arrow keys, Home and End move
 * between tabs, and only the selected tab is in the tab order.
 */
export function setupTabs(tablist: HTMLElement, onSelect: (panelId: string) => void): (panelId: string) => void {
  const tabs = [...tablist.querySelectorAll<HTMLButtonElement>('[role="tab"]')]
  const select = (tab: HTMLButtonElement, focus: boolean) => {
    for (const t of tabs) {
      const selected = t === tab
      t.setAttribute('aria-selected', String(selected))
      t.tabIndex = selected ? 0 : -1
      const panel = document.getElementById(t.getAttribute('aria-controls') ?? '')
      if (panel) panel.hidden = !selected
    }
    if (focus) tab.focus()
    onSelect(tab.getAttribute('aria-controls') ?? '')
  }
  for (const tab of tabs) {
    tab.addEventListener('click', () => select(tab, false))
    tab.addEventListener('keydown', (event) => {
      const i = tabs.indexOf(tab)
      const next =
        event.key === 'ArrowRight' ? tabs[(i + 1) % tabs.length]
        : event.key === 'ArrowLeft' ? tabs[(i - 1 + tabs.length) % tabs.length]
        : event.key === 'Home' ? tabs[0]
        : event.key === 'End' ? tabs.at(-1)
        : undefined
      if (!next) return
      event.preventDefault()
      select(next, true)
    })
  }
  return (panelId) => {
    const tab = tabs.find((t) => t.getAttribute('aria-controls') === panelId)
    if (tab) select(tab, false)
  }
}

/** A small element helper: tag, class, text and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; text?: string; attrs?: Record<string, string> } = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  if (props.className) node.className = props.className
  if (props.text !== undefined) node.textContent = props.text
  for (const [k, v] of Object.entries(props.attrs ?? {})) node.setAttribute(k, v)
  node.append(...children)
  return node
}
