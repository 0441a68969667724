"""Writes the mixed-format documents of ``examples/manuals/docs`` (run once; the files are
committed, so the examples need neither this script nor fpdf2 to run).

    python examples/manuals/make_documents.py

PDFs with fpdf2 (core fonts, so the files stay a few KB; a running header and a page number on
every page, which ingestion must leave out), Word files with python-docx (headings, paragraphs
and a table), HTML pages with navigation, a script and a footer around the text (ingestion keeps
the text and the title). The content is made up for the fictional Lumio note-taking product of
``examples/support``.
"""

from __future__ import annotations

import html
from pathlib import Path

DOCS = Path(__file__).resolve().parent / "docs"

#: (file name, title, [(section heading, paragraphs)])
PDFS = [
    (
        "security-whitepaper.pdf",
        "Lumio security whitepaper",
        [
            (
                "Encryption",
                [
                    "Every note, attachment and comment is encrypted at rest with AES-256 in "
                    "Galois/Counter Mode. Each workspace has its own data key, and data keys are "
                    "wrapped by a master key held in a hardware security module that Lumio "
                    "staff cannot export.",
                    "Traffic between the apps and Lumio servers uses TLS 1.3 only; older "
                    "protocol versions are refused. Certificates are pinned in the mobile apps.",
                ],
            ),
            (
                "Customer-managed keys",
                [
                    "On the Enterprise plan a workspace can bring its own key from AWS KMS or "
                    "Azure Key Vault. Revoking that key makes the workspace unreadable within "
                    "five minutes, including for Lumio support engineers.",
                ],
            ),
            (
                "Certifications and testing",
                [
                    "Lumio holds a SOC 2 Type II report and ISO/IEC 27001 certification, both "
                    "renewed every year. An independent firm runs a penetration test twice a "
                    "year; the summary letter is available under NDA from the trust portal.",
                    "Security researchers can report vulnerabilities through the bug bounty "
                    "programme; rewards range from 200 to 10,000 US dollars by severity.",
                ],
            ),
        ],
    ),
    (
        "service-level-agreement.pdf",
        "Lumio service level agreement",
        [
            (
                "Uptime commitment",
                [
                    "Lumio commits to 99.9 percent monthly uptime for the web app, the sync "
                    "service and the public API on the Business plan, and 99.95 percent on the "
                    "Enterprise plan. Scheduled maintenance announced 72 hours ahead does not "
                    "count as downtime.",
                ],
            ),
            (
                "Service credits",
                [
                    "If monthly uptime falls below the commitment, the customer receives a "
                    "service credit: 10 percent of the monthly fee below 99.9 percent, 25 "
                    "percent below 99.0 percent and 50 percent below 95.0 percent.",
                    "Credits must be claimed within 30 days of the end of the affected month "
                    "by writing to the billing team; they are applied to the next invoice and "
                    "are never paid out in cash.",
                ],
            ),
            (
                "Support response times",
                [
                    "Urgent tickets (the service is down for the whole workspace) receive a "
                    "first response within one hour, at any time of day. High priority tickets "
                    "are answered within four business hours and normal tickets within one "
                    "business day.",
                ],
            ),
        ],
    ),
    (
        "desktop-installation-guide.pdf",
        "Lumio desktop installation guide",
        [
            (
                "System requirements",
                [
                    "The desktop app runs on Windows 10 or later, macOS 12 Monterey or later "
                    "and Ubuntu 22.04 or later. It needs 4 GB of memory and 500 MB of free disk "
                    "space, plus room for the offline copy of your notes.",
                ],
            ),
            (
                "Installing for one user",
                [
                    "Download the installer from the Lumio website and run it; no "
                    "administrator rights are needed, because the app installs into the user "
                    "profile. On first start, sign in with your work email.",
                ],
            ),
            (
                "Deploying to many computers",
                [
                    "IT teams can deploy the MSI package with Microsoft Intune or Group Policy, "
                    "and the PKG package with Jamf on macOS. The setting AutoUpdate=0 turns off "
                    "automatic updates so that the IT team can test each release first.",
                    "A proxy server is detected from the system settings. To set one "
                    "explicitly, start the app with the --proxy-server flag.",
                ],
            ),
        ],
    ),
    (
        "data-processing-agreement.pdf",
        "Data processing agreement",
        [
            (
                "Roles",
                [
                    "The customer is the controller of the personal data stored in its "
                    "workspace and Lumio acts as processor, processing the data only on the "
                    "customer's documented instructions.",
                ],
            ),
            (
                "Sub-processors",
                [
                    "Lumio uses a short list of sub-processors for hosting, email delivery and "
                    "payment processing. Customers are told at least 30 days before a new "
                    "sub-processor starts, and may object in that time.",
                ],
            ),
            (
                "Data location and deletion",
                [
                    "Workspaces created in the European Union region are stored in Frankfurt "
                    "and Dublin and never leave the EU. After a workspace is deleted, its data "
                    "is removed from live systems within 30 days and from backups within 90 "
                    "days.",
                    "Personal data breaches are reported to the customer without undue delay "
                    "and at the latest within 48 hours of Lumio becoming aware of them.",
                ],
            ),
        ],
    ),
]

PDFS.append(
    (
        "mobile-app-guide.pdf",
        "Lumio mobile app guide",
        [
            (
                "Capturing notes",
                [
                    "Tap the plus button to start a note, or hold it to scan a paper document "
                    "with the camera; scanned pages are straightened and their text is "
                    "recognised so that search can find it.",
                    "Share a web page from the browser to Lumio to save it as a clipped note "
                    "with the page's title and link.",
                ],
            ),
            (
                "Widgets and reminders",
                [
                    "Add the Lumio widget to the home screen to see today's reminders and "
                    "pinned notes. A reminder on a note sends a push notification at the chosen "
                    "time, also when the app is closed.",
                ],
            ),
            (
                "Saving mobile data",
                [
                    "Under Settings, Sync, turn on Wi-Fi only to stop attachments from "
                    "downloading over the cellular network; notes themselves still sync, "
                    "because text uses very little data.",
                ],
            ),
        ],
    )
)

DOCXS = [
    (
        "release-notes-5.0.docx",
        "Lumio 5.0 release notes",
        [
            (
                "New features",
                [
                    "Whiteboards: draw diagrams next to your notes with shapes, arrows and "
                    "sticky notes, and present them in full screen.",
                    "Version history now keeps every change for 365 days on the Business plan "
                    "(previously 90 days), and any earlier version can be restored in one "
                    "click.",
                ],
            ),
            (
                "Changes",
                [
                    "The minimum supported iOS version is now iOS 16. The legacy REST API v1 "
                    "stops working on 31 March; move your integrations to API v2 before then.",
                ],
            ),
            (
                "Fixed issues",
                [
                    "Pasting a table from a spreadsheet no longer drops empty cells. Search "
                    "finds words inside PDF attachments again after the 4.9 regression.",
                ],
            ),
        ],
    ),
    (
        "admin-onboarding-checklist.docx",
        "Onboarding checklist for workspace admins",
        [
            (
                "Before inviting people",
                [
                    "Verify your company domain by adding the TXT record shown in the admin "
                    "console to your DNS; verified domains let colleagues join without an "
                    "invitation.",
                    "Connect single sign-on through SAML with Okta, Microsoft Entra ID or "
                    "Google Workspace, then turn on SCIM provisioning so that leavers lose "
                    "access automatically.",
                ],
            ),
            (
                "The first week",
                [
                    "Create team spaces for each department and choose their default sharing "
                    "level. Import existing notes with the importer, which reads Evernote ENEX "
                    "files and Notion exports.",
                ],
            ),
        ],
    ),
]

#: a table in the onboarding checklist: roles and what they may do
ROLES = [
    ("Role", "Can invite members", "Can change billing"),
    ("Owner", "yes", "yes"),
    ("Admin", "yes", "no"),
    ("Member", "no", "no"),
]

HTMLS = [
    (
        "keyboard-shortcuts.html",
        "Keyboard shortcuts",
        [
            (
                "Everywhere",
                [
                    "Press Ctrl+K (Cmd+K on a Mac) to open the quick switcher and jump to any "
                    "note by typing part of its title. Ctrl+Shift+F searches all notes.",
                ],
            ),
            (
                "In the editor",
                [
                    "Ctrl+Alt+1 to Ctrl+Alt+3 turn a line into a heading of that level. "
                    "Ctrl+Shift+8 starts a bulleted list and Ctrl+Shift+9 a checklist; press "
                    "Ctrl+Enter to tick the checkbox of the current line.",
                ],
            ),
        ],
    ),
    (
        "offline-mode.html",
        "Working offline",
        [
            (
                "What is available offline",
                [
                    "The desktop and mobile apps keep a copy of every note you opened in the "
                    "last 30 days, and of whole notebooks you mark as available offline. You "
                    "can edit them without a connection; changes sync when you are back "
                    "online.",
                ],
            ),
            (
                "Conflicts",
                [
                    "If two people changed the same paragraph while one of them was offline, "
                    "Lumio keeps both versions and shows a conflict banner at the top of the "
                    "note, so that nothing is lost. Choose the version to keep, or merge them "
                    "by hand.",
                ],
            ),
        ],
    ),
    (
        "accessibility-statement.html",
        "Accessibility statement",
        [
            (
                "Standards",
                [
                    "The Lumio web app aims to conform to WCAG 2.2 at level AA. It works with "
                    "the NVDA and JAWS screen readers on Windows and with VoiceOver on macOS "
                    "and iOS.",
                ],
            ),
            (
                "Known limitations",
                [
                    "Whiteboards cannot yet be used with a screen reader; a text outline of "
                    "each whiteboard is planned. Report an accessibility problem to "
                    "accessibility@lumio.example and expect an answer within five working "
                    "days.",
                ],
            ),
        ],
    ),
    (
        "status-and-incidents.html",
        "Status page and incident history",
        [
            (
                "Where to see the status",
                [
                    "status.lumio.example shows the live state of the web app, sync, search and "
                    "the API. Subscribe there to receive incident updates by email, SMS or a "
                    "Slack channel.",
                ],
            ),
            (
                "Recent incidents",
                [
                    "On 14 February sync was delayed for 47 minutes in the EU region after a "
                    "database failover; no data was lost. On 2 March search results were "
                    "incomplete for two hours while the index was rebuilt.",
                ],
            ),
        ],
    ),
]


HTMLS += [
    (
        "import-guide.html",
        "Importing notes from other apps",
        [
            (
                "Evernote",
                [
                    "Export each notebook from Evernote as an ENEX file, then drag the files "
                    "onto the import page. Tags become Lumio labels and the creation dates of "
                    "notes are kept.",
                ],
            ),
            (
                "Notion and Markdown",
                [
                    "Export a Notion workspace as Markdown and CSV, zip it, and upload the zip; "
                    "databases become tables. A folder of Markdown files is imported with its "
                    "subfolders turned into nested notebooks.",
                    "Imports larger than 2 GB are split: upload the parts one after the other.",
                ],
            ),
        ],
    ),
    (
        "sharing-and-permissions.html",
        "Sharing and permissions",
        [
            (
                "Sharing a note",
                [
                    "Share a note with a colleague as viewer, commenter or editor. A public "
                    "link lets anyone with the link read the note without signing in; admins "
                    "can turn public links off for the whole workspace.",
                ],
            ),
            (
                "Guests",
                [
                    "Guests are people outside your company invited to a single team space. "
                    "They do not take a paid seat, but they cannot create team spaces or see "
                    "the member directory. A guest link expires after 90 days unless renewed.",
                ],
            ),
        ],
    ),
]


def _pdf(name: str, title: str, sections: list) -> None:
    from fpdf import FPDF

    class Manual(FPDF):
        def header(self) -> None:  # a running header, as in real manuals
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 8, f"Lumio - {title}", align="R")
            self.ln(10)

        def footer(self) -> None:
            self.set_y(-12)
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 8, f"Page {self.page_no()}", align="C")

    pdf = Manual(format="A4")
    pdf.set_creation_date(__import__("datetime").datetime(2026, 1, 1))  # reproducible bytes
    pdf.set_auto_page_break(auto=True, margin=16)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.multi_cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
    for i, (heading, paragraphs) in enumerate(sections):
        if i:
            pdf.add_page()  # a page per section: the running header repeats on every page
        pdf.set_font("Helvetica", "B", 11)
        pdf.multi_cell(0, 7, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 10)
        for paragraph in paragraphs:
            pdf.multi_cell(0, 5, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    pdf.output(str(DOCS / name))


def _docx(name: str, title: str, sections: list) -> None:
    import docx

    document = docx.Document()
    document.core_properties.created = __import__("datetime").datetime(2026, 1, 1)
    document.add_heading(title, level=1)
    for heading, paragraphs in sections:
        document.add_heading(heading, level=2)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    if name.startswith("admin"):
        document.add_heading("Roles", level=2)
        table = document.add_table(rows=len(ROLES), cols=len(ROLES[0]))
        for r, row in enumerate(ROLES):
            for c, value in enumerate(row):
                table.cell(r, c).text = value
    document.save(str(DOCS / name))
    _slim_docx(DOCS / name)


#: parts of python-docx's default template that no reader needs (a copy of the styles for
#: Word 2010, a thumbnail, custom XML): dropped so each file is ~20 KB instead of ~37 KB
_DROPPED = ("word/stylesWithEffects.xml", "docProps/thumbnail.jpeg", "customXml/")


def _slim_docx(path: Path) -> None:
    import re
    import zipfile

    with zipfile.ZipFile(path) as z:
        parts = {info.filename: z.read(info) for info in z.infolist()}
    kept = {n: data for n, data in parts.items() if not n.startswith(_DROPPED)}
    for rels in ("_rels/.rels", "word/_rels/document.xml.rels", "[Content_Types].xml"):
        text = kept[rels].decode("utf-8")
        for dropped in ("stylesWithEffects.xml", "thumbnail.jpeg", "customXml/", "/customXml"):
            text = re.sub(rf"<(Relationship|Override)[^>]*{re.escape(dropped)}[^>]*/>", "", text)
        kept[rels] = text.encode("utf-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in kept.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            z.writestr(info, data, zipfile.ZIP_DEFLATED)


def _html(name: str, title: str, sections: list) -> None:
    body = "\n".join(
        f"<h2>{html.escape(h)}</h2>\n" + "\n".join(f"<p>{html.escape(p)}</p>" for p in ps)
        for h, ps in sections
    )
    page = f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{html.escape(title)} - Lumio Help</title>
<style>body {{ font-family: sans-serif; }}</style>
<script>window.analytics = {{ page: "{name}" }};</script></head>
<body>
<header><a href="/">Lumio Help Center</a></header>
<nav><a href="/billing">Billing</a> <a href="/admin">Admin</a> <a href="/api">API</a></nav>
<main><h1>{html.escape(title)}</h1>
{body}
</main>
<footer>Copyright Lumio. <a href="/privacy">Privacy</a></footer>
</body>
</html>
"""
    (DOCS / name).write_text(page, encoding="utf-8")


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    for name, title, sections in PDFS:
        _pdf(name, title, sections)
    for name, title, sections in DOCXS:
        _docx(name, title, sections)
    for name, title, sections in HTMLS:
        _html(name, title, sections)


if __name__ == "__main__":
    main()
