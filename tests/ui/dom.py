"""A small HTML tree for the page tests (the standard library's parser): elements by id, tag or
class, their attributes and text, and what labels a form control."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
LABELABLE = {"input", "select", "textarea", "button", "meter", "output", "progress"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parent: Element | None = None
    children: list[Element | str] = field(default_factory=list)

    def iter(self) -> Iterator[Element]:
        for child in self.children:
            if isinstance(child, Element):
                yield child
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Element]:
        return [e for e in self.iter() if (tag is None or e.tag == tag)
                and all(e.attrs.get(k.rstrip("_")) == v for k, v in attrs.items())]

    def by_id(self, element_id: str) -> Element:
        found = self.find_all(id=element_id)
        assert len(found) == 1, f"{len(found)} elements with id {element_id!r}"
        return found[0]

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def with_class(self, name: str) -> list[Element]:
        return [e for e in self.iter() if name in e.classes()]

    @property
    def text(self) -> str:
        parts = [c if isinstance(c, str) else c.text for c in self.children]
        return " ".join(" ".join(parts).split())

    def ancestors(self) -> Iterator[Element]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.node = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, parent=self.node)
        self.node.children.append(element)
        if tag not in VOID:
            self.node = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.node.children.append(Element(tag, {k: v or "" for k, v in attrs}, parent=self.node))

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.node
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:  # else a stray end tag
            self.node = node.parent

    def handle_data(self, data: str) -> None:
        self.node.children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


def label_of(root: Element, control: Element) -> str | None:
    """The text that names a form control: aria-label, a label for its id, or the label around
    it when the control is that label's first labelable element (a label names one control)."""
    if control.attrs.get("aria-label"):
        return control.attrs["aria-label"]
    if control.attrs.get("id"):
        for label in root.find_all("label", for_=control.attrs["id"]):
            return label.text
    for ancestor in control.ancestors():
        if ancestor.tag == "label" and "for" not in ancestor.attrs:
            first = next((e for e in ancestor.iter() if e.tag in LABELABLE
                          and e.attrs.get("type") != "hidden"), None)
            return ancestor.text if first is control else None
    return None
