"""A small offline website on 127.0.0.1 for tests of search, fetch and the engines.

It serves ~11 English articles (solar power, battery storage, heat pumps), four
Simplified Chinese pages (新能源汽车, 光伏), one PDF, one plain text page, a
SearXNG-style JSON search endpoint over all of them, and a few hostile or odd
endpoints (redirects, slow, oversized, binary, error statuses).

The figures in the articles are rounded, approximate values of the kind found
in public energy statistics; they exist to give tests sentences with numbers.

    with TestSite() as site:
        hits = httpx.get(f"{site.url}/search", params={"q": "solar power costs", "format": "json"}).json()
"""

from __future__ import annotations

import html
import json
import math
import re
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class SitePage:
    path: str
    title: str
    lang: str  # "en" | "zh"
    topic: str  # solar | storage | heat_pumps | ev | pv_china | mixed
    paragraphs: tuple[str, ...]
    kind: str = "html"  # html | pdf | text
    keywords: tuple[str, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


def _p(*paras: str) -> tuple[str, ...]:
    return tuple(" ".join(p.split()) for p in paras)


PAGES: list[SitePage] = [
    # --- solar power ----------------------------------------------------------
    SitePage(
        "/articles/solar-power-costs.html",
        "The Falling Cost of Solar Power",
        "en",
        "solar",
        _p(
            """Solar power has become the cheapest source of new electricity in much of the world. The
            global average levelized cost of electricity (LCOE) from new utility-scale solar photovoltaic
            plants fell from about $0.42 per kilowatt-hour in 2010 to roughly $0.044 per kilowatt-hour in
            2023, a decline of around 90 percent in thirteen years.""",
            """The main driver of lower solar power costs is the price of modules. Crystalline silicon
            module prices dropped below $0.15 per watt in 2024, compared with more than $2 per watt in 2010.
            Manufacturing scale in China, thinner wafers and higher cell efficiency all contributed.""",
            """Balance-of-system costs, which include inverters, racking, labour and grid connection, now
            make up more than half of the cost of a large solar farm. In 2023 the total installed cost of
            utility-scale solar averaged about $758 per kilowatt worldwide, down from $5,310 per kilowatt
            in 2010.""",
            """Financing matters as much as hardware. Because a solar plant has no fuel cost, almost all of
            its lifetime cost is paid up front, so a rise in interest rates from 2 percent to 6 percent can
            raise the cost of solar electricity by roughly 30 percent.""",
            """Analysts expect solar power costs to keep falling, though more slowly: most forecasts see
            a further 15 to 25 percent decline in utility-scale solar LCOE by 2030.""",
        ),
        keywords=("solar", "cost", "lcoe", "price"),
    ),
    SitePage(
        "/articles/how-solar-panels-work.html",
        "How Solar Panels Convert Sunlight into Electricity",
        "en",
        "solar",
        _p(
            """A solar panel is made of photovoltaic cells, usually of crystalline silicon. When sunlight
            strikes a cell, photons knock electrons loose and an electric field across the p-n junction
            pushes them into a circuit as direct current.""",
            """Commercial monocrystalline panels sold in 2024 convert about 21 to 23 percent of incoming
            sunlight into electricity. In 2010 typical panels reached only 14 to 15 percent. TOPCon and
            heterojunction cells have largely replaced older PERC designs since 2023.""",
            """In the laboratory, perovskite-silicon tandem cells passed 33 percent efficiency in 2023,
            well above the practical limit of about 29 percent for single-junction silicon cells.""",
            """Panels lose a little output every year. Most manufacturers guarantee that a panel will still
            deliver at least 80 to 87 percent of its rated power after 25 years, which corresponds to an
            annual degradation of about 0.4 to 0.5 percent.""",
            """An inverter converts the direct current from the panels into alternating current for the
            grid. Inverter efficiency is typically 96 to 98 percent.""",
        ),
        keywords=("solar", "panel", "efficiency", "photovoltaic"),
    ),
    SitePage(
        "/articles/global-solar-installations.html",
        "Global Solar Installations Reach Record Levels",
        "en",
        "solar",
        _p(
            """The world installed about 447 gigawatts of new solar power capacity in 2023, roughly 75
            percent more than in 2022, according to industry estimates. Cumulative solar capacity passed
            1.6 terawatts by the end of the year.""",
            """China alone added about 217 gigawatts of solar power in 2023, more than the entire world
            installed in 2021. The European Union added around 56 gigawatts and the United States about
            33 gigawatts.""",
            """Solar power generated about 5.5 percent of the world's electricity in 2023, up from 1.2
            percent in 2015. In some markets the share is far higher: solar supplied more than 17 percent
            of electricity in the Netherlands and around 16 percent in Australia.""",
            """Installations grew again in 2024, to an estimated 550 to 600 gigawatts, as module prices fell
            and new factories came online.""",
        ),
        keywords=("solar", "capacity", "installations", "gigawatts"),
    ),
    SitePage(
        "/articles/rooftop-solar-payback.html",
        "Rooftop Solar for Homes: Costs and Payback",
        "en",
        "solar",
        _p(
            """A typical residential rooftop solar system in the United States is about 7 kilowatts and
            cost between $2.50 and $3.50 per watt before incentives in 2024, or roughly $17,500 to $24,500
            in total.""",
            """The federal residential clean energy credit covers 30 percent of the installed cost of solar
            panels for systems placed in service between 2022 and 2032, which brings the average net
            cost of a 7 kilowatt system to about $14,000.""",
            """Payback periods for home solar power usually range from 6 to 10 years, depending on local
            electricity prices, sunshine and net metering rules. In Germany, where household electricity
            costs around 0.40 euros per kilowatt-hour, small rooftop systems can pay for themselves in
            under 9 years.""",
            """A 7 kilowatt array in a sunny state such as Arizona produces about 11,000 kilowatt-hours a
            year, close to the annual consumption of an average American home.""",
        ),
        keywords=("solar", "rooftop", "home", "payback", "cost"),
    ),
    # --- battery storage --------------------------------------------------------
    SitePage(
        "/articles/battery-prices.html",
        "Lithium-Ion Battery Prices Keep Falling",
        "en",
        "storage",
        _p(
            """Average lithium-ion battery pack prices fell to about $139 per kilowatt-hour in 2023 and to
            roughly $115 per kilowatt-hour in 2024. In 2010 a kilowatt-hour of battery pack capacity cost
            more than $1,100, so prices have fallen by about 90 percent.""",
            """Cheaper raw materials drove much of the 2024 decline: lithium carbonate prices dropped by
            more than 75 percent from their peak in late 2022.""",
            """Stationary storage packs became cheaper than electric vehicle packs for the first time in
            2024, averaging around $125 per kilowatt-hour, helped by lithium iron phosphate (LFP)
            chemistry.""",
            """Forecasters expect battery pack prices to reach about $80 per kilowatt-hour by 2030, a level
            at which electric cars are cheaper to buy than petrol cars in most segments.""",
        ),
        keywords=("battery", "price", "lithium-ion", "storage", "cost"),
    ),
    SitePage(
        "/articles/grid-battery-storage.html",
        "Grid-Scale Battery Storage Explained",
        "en",
        "storage",
        _p(
            """Grid-scale batteries store electricity when it is cheap or abundant, for example from solar
            power at midday, and release it when demand peaks in the evening. Most new projects are built
            with four hours of storage duration.""",
            """The Hornsdale Power Reserve in South Australia, switched on in 2017 with 100 megawatts and
            129 megawatt-hours, showed that batteries could stabilise a grid within milliseconds. It was
            expanded to 150 megawatts and 194 megawatt-hours in 2020.""",
            """California had more than 10 gigawatts of battery storage connected to its grid by 2024,
            up from about 500 megawatts in 2020. On spring evenings batteries now supply over 20 percent of
            the state's peak demand.""",
            """Modern lithium-ion storage systems have a round-trip efficiency of about 85 to 90 percent,
            meaning that 10 to 15 percent of the energy is lost between charging and discharging.""",
            """Worldwide, about 45 gigawatts of battery storage were added in 2023, nearly double the
            amount added in 2022.""",
        ),
        keywords=("battery", "storage", "grid", "megawatt"),
    ),
    SitePage(
        "/articles/lfp-vs-nmc.html",
        "LFP vs NMC: Choosing a Battery Chemistry",
        "en",
        "storage",
        _p(
            """Lithium iron phosphate (LFP) and nickel manganese cobalt (NMC) are the two dominant
            lithium-ion battery chemistries. NMC cells store more energy per kilogram, about 250 watt-hours
            per kilogram against roughly 160 to 180 for LFP cells.""",
            """LFP cells last longer and are safer. They typically survive 3,000 to 6,000 full charge
            cycles, while NMC cells manage about 1,000 to 2,000 cycles, and LFP is much less prone to
            thermal runaway.""",
            """Because LFP uses no nickel or cobalt, it is cheaper: LFP cells cost about 20 to 30 percent
            less per kilowatt-hour than NMC cells in 2023. LFP's share of the global electric car battery
            market rose to about 40 percent in 2023, up from under 10 percent in 2020.""",
            """Almost all new stationary battery storage projects now use LFP, since weight matters little
            for a battery that sits in a container.""",
        ),
        keywords=("battery", "lfp", "nmc", "chemistry", "storage"),
    ),
    # --- heat pumps --------------------------------------------------------------
    SitePage(
        "/articles/heat-pump-efficiency.html",
        "How Efficient Are Heat Pumps?",
        "en",
        "heat_pumps",
        _p(
            """A heat pump moves heat instead of making it. Its efficiency is measured by the coefficient
            of performance (COP): the units of heat delivered per unit of electricity used. Modern air-source
            heat pumps reach a COP of 3 to 4 in mild weather, delivering 3 to 4 kilowatt-hours of heat for
            each kilowatt-hour of electricity.""",
            """Heat pump efficiency falls as the outdoor temperature drops. A typical air-source unit with a
            COP of 4.0 at 7 °C may reach about 2.5 at -7 °C and around 2.0 at -15 °C, still twice as efficient
            as electric resistance heating, whose COP is 1.""",
            """Ground-source heat pumps are more efficient in winter because the ground stays at 8 to
            12 °C all year; their seasonal COP is typically 3.5 to 5.""",
            """Over a whole heating season, field trials in the United Kingdom between 2020 and 2023 measured
            a median seasonal performance factor of 2.8 for air-source heat pumps, with the best
            installations above 4.""",
            """Heat pump efficiency also depends on the flow temperature of the heating system: lowering it
            from 55 °C to 35 °C, for example with underfloor heating, can raise the COP by roughly 25 to 30
            percent.""",
        ),
        keywords=("heat", "pump", "efficiency", "cop"),
    ),
    SitePage(
        "/articles/heat-pump-sales.html",
        "Heat Pump Sales Around the World",
        "en",
        "heat_pumps",
        _p(
            """Global heat pump sales grew by about 11 percent in 2022, the second year in a row of
            double-digit growth, according to the International Energy Agency. Heat pumps met about 10
            percent of global building heating needs that year.""",
            """Europe saw the fastest growth: about 3 million heat pumps were sold in 2022, almost 40 percent
            more than in 2021, as gas prices soared after Russia's invasion of Ukraine. Poland's sales more
            than doubled.""",
            """Sales in Europe fell by around 5 percent in 2023 and further in 2024 as gas prices came down,
            subsidy rules changed in Germany and interest rates rose.""",
            """In the United States, heat pumps have outsold gas furnaces every year since 2022; about 4.3
            million heat pumps were shipped in 2022 against 3.9 million gas furnaces.""",
        ),
        keywords=("heat", "pump", "sales", "market"),
    ),
    SitePage(
        "/articles/heat-pumps-cold-climates.html",
        "Heat Pumps in Cold Climates",
        "en",
        "heat_pumps",
        _p(
            """Heat pumps work in cold countries. Norway has about 60 heat pumps for every 100 households,
            the highest rate in the world, followed by Sweden and Finland with more than 40.""",
            """Cold-climate air-source heat pumps are rated to keep heating at -25 °C or below. In a 2023
            field test in Canada, cold-climate models kept a COP above 1.5 at -20 °C.""",
            """The US state of Maine set a goal of 100,000 new heat pumps by 2025 and reached it in 2023,
            two years early, then doubled the target to 275,000 by 2027.""",
            """Good insulation matters: a well-insulated house needs a smaller heat pump, which runs at
            higher efficiency and costs less to install.""",
        ),
        keywords=("heat", "pump", "cold", "climate", "efficiency"),
    ),
    SitePage(
        "/articles/solar-plus-battery.html",
        "Pairing Rooftop Solar with a Home Battery",
        "en",
        "mixed",
        _p(
            """Home batteries let households use more of their own solar power. Without storage, a typical
            home uses only 30 to 40 percent of its rooftop solar output directly; with a 10 kilowatt-hour
            battery the share rises to 60 to 80 percent.""",
            """A 10 kilowatt-hour home battery cost about $8,000 to $12,000 installed in the United States
            in 2024. Falling lithium-ion battery prices are expected to bring that down by a third by 2030.""",
            """In Germany more than 80 percent of new home solar power systems installed in 2023 included a
            battery. Combining solar, a battery and a heat pump can cut a household's grid electricity
            purchases by half.""",
        ),
        keywords=("solar", "battery", "home", "storage"),
    ),
    # --- Simplified Chinese ------------------------------------------------------------
    SitePage(
        "/zh/nev-sales.html",
        "中国新能源汽车销量再创新高",
        "zh",
        "ev",
        _p(
            """根据中国汽车工业协会的数据，2023年中国新能源汽车销量达到949.5万辆，同比增长37.9%，
            新能源汽车销量占汽车总销量的31.6%。""",
            """2024年中国新能源汽车销量继续增长，全年销量约为1286.6万辆，同比增长35.5%，
            市场占有率达到40.9%。其中纯电动汽车销量约771.9万辆，插电式混合动力汽车销量约514.1万辆。""",
            """新能源汽车出口也快速增长。2023年中国新能源汽车出口120.3万辆，同比增长77.6%，
            比亚迪、特斯拉上海工厂和上汽集团是主要出口企业。""",
            """业内人士认为，充电基础设施的完善和电池成本的下降是新能源汽车销量增长的重要原因。
            截至2023年底，全国充电基础设施累计数量达到859.6万台。""",
        ),
        keywords=("新能源汽车", "销量"),
    ),
    SitePage(
        "/zh/nev-exports.html",
        "新能源汽车出口与海外市场",
        "zh",
        "ev",
        _p(
            """2023年中国汽车出口491万辆，首次成为全球最大的汽车出口国，其中新能源汽车出口120.3万辆，
            占汽车出口总量的24.5%。""",
            """2024年新能源汽车出口继续增长，全年出口约128.4万辆，同比增长6.7%。欧洲、东南亚和
            拉丁美洲是中国新能源汽车的主要海外市场。""",
            """比亚迪2024年海外销量超过41万辆，约占其新能源汽车总销量的10%。多家车企在泰国、
            匈牙利和巴西建设工厂，以应对关税并贴近当地市场。""",
        ),
        keywords=("新能源汽车", "出口", "销量"),
    ),
    SitePage(
        "/zh/ev-batteries.html",
        "新能源汽车动力电池产业观察",
        "zh",
        "ev",
        _p(
            """2023年中国动力电池累计装车量为387.7GWh，同比增长31.6%。其中磷酸铁锂电池装车量
            261.0GWh，占总装车量的67.3%；三元电池装车量126.2GWh，占比32.6%。""",
            """宁德时代和比亚迪是全球最大的两家动力电池企业。2023年宁德时代在中国动力电池市场的
            份额约为43%，比亚迪约为27%。""",
            """电池价格的下降推动了新能源汽车销量的增长。2023年碳酸锂价格下跌超过70%，
            磷酸铁锂电芯价格降至每瓦时0.5元左右。""",
        ),
        keywords=("动力电池", "新能源汽车", "磷酸铁锂"),
    ),
    SitePage(
        "/zh/china-pv-installations.html",
        "中国光伏装机规模持续扩大",
        "zh",
        "pv_china",
        _p(
            """国家能源局数据显示，2023年全国光伏新增装机216.88GW，同比增长148%，
            截至2023年底，全国光伏发电累计装机容量约609GW。""",
            """2024年光伏新增装机约277.57GW，再创历史新高，其中分布式光伏新增约118GW。
            光伏已经成为中国新增装机规模最大的电源类型。""",
            """2023年全国光伏发电量约5833亿千瓦时，同比增长36.7%，占全社会用电量的6.3%左右。""",
        ),
        keywords=("光伏", "装机"),
    ),
    SitePage(
        "/zh/pv-module-prices.html",
        "光伏组件价格大幅下降",
        "zh",
        "pv_china",
        _p(
            """2023年光伏产业链价格大幅下跌。多晶硅价格从年初的每吨约18万元下降到年底的约6万元，
            降幅超过60%。""",
            """光伏组件价格在2023年下降超过40%，年底主流组件价格已低于每瓦1元，
            2024年进一步降至每瓦0.7元左右。""",
            """组件价格下降降低了光伏电站的投资成本。2023年地面光伏电站的单位造价约为每瓦3.4元，
            光伏发电成本已低于燃煤发电的标杆电价。""",
        ),
        keywords=("光伏", "组件", "价格"),
    ),
    # --- other formats ------------------------------------------------------------------
    SitePage(
        "/docs/solar-outlook-2024.pdf",
        "Solar and Storage Outlook 2024",
        "en",
        "mixed",
        _p(
            "Solar and Storage Outlook 2024",
            "Global solar additions reached about 447 GW in 2023.",
            "Utility-scale solar LCOE fell about 90 percent between 2010 and 2023.",
            "Battery pack prices averaged 115 dollars per kWh in 2024.",
            "Heat pumps with a COP of 3 cut heating energy use by two thirds.",
        ),
        kind="pdf",
        keywords=("solar", "storage", "outlook", "battery"),
    ),
    SitePage(
        "/notes/heat-pump-faq.txt",
        "Heat pump FAQ",
        "en",
        "heat_pumps",
        _p(
            "Heat pump FAQ",
            """Q: How much electricity does a heat pump use? A: A heat pump with a seasonal COP of 3 uses
            about 4,000 kWh of electricity to deliver 12,000 kWh of heat, a typical annual demand for a
            European home.""",
            """Q: How long do heat pumps last? A: Most air-source heat pumps last 15 to 20 years; ground
            loops last 50 years or more.""",
        ),
        kind="text",
        keywords=("heat", "pump", "faq"),
    ),
]

OVERSIZE_BYTES = 6_000_000  # larger than fetch_url's 5 MB cap
TAVILY_TEST_KEY = "test-key"


def page_by_path(path: str) -> SitePage:
    for page in PAGES:
        if page.path == path:
            return page
    raise KeyError(path)


# --- rendering -------------------------------------------------------------------------


def _render_html(page: SitePage) -> bytes:
    nav = "".join(
        f'<li><a href="{p.path}">{html.escape(p.title)}</a></li>' for p in PAGES if p.lang == page.lang and p != page
    )
    body = "\n".join(f"<p>{html.escape(para)}</p>" for para in page.paragraphs)
    doc = f"""<!DOCTYPE html>
<html lang="{'zh-CN' if page.lang == 'zh' else 'en'}">
<head><meta charset="utf-8"><title>{html.escape(page.title)}</title>
<meta name="description" content="{html.escape(page.paragraphs[0][:150])}"></head>
<body>
<header><nav><a href="/">Energy Notes</a></nav></header>
<main><article>
<h1>{html.escape(page.title)}</h1>
{body}
</article></main>
<aside><h2>{'相关文章' if page.lang == 'zh' else 'Related'}</h2><ul>{nav}</ul></aside>
<footer><p>Energy Notes test site</p></footer>
</body></html>"""
    return doc.encode("utf-8")


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(lines: list[str], title: str = "") -> bytes:
    """A small valid one-page PDF with one text line per entry (Helvetica, ASCII)."""
    ops = ["BT", "/F1 12 Tf", "14 TL", "72 760 Td"]
    for i, line in enumerate(lines):
        ops.append(f"({_pdf_escape(line)}) Tj" if i == 0 else f"T* ({_pdf_escape(line)}) Tj")
    ops.append("ET")
    stream = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Title (" + _pdf_escape(title).encode("latin-1") + b") >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for num, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % num + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def make_png(width: int = 8, height: int = 8) -> bytes:
    """A tiny valid RGB PNG (a gradient)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 30 % 256, y * 30 % 256, 128)) for x in range(width)) for y in range(height)
    )
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


_PDF_PAGE = next(p for p in PAGES if p.kind == "pdf")
PDF_BYTES = make_pdf(list(_PDF_PAGE.paragraphs), title=_PDF_PAGE.title)
PNG_BYTES = make_png()


# --- search ------------------------------------------------------------------------------

_STOP = {
    "the", "a", "an", "of", "and", "or", "in", "on", "for", "to", "is", "are", "how", "what", "by", "with",
    "does", "do", "at", "as", "from", "about", "into", "per", "its", "it", "be", "that", "this", "than",
}  # fmt: skip
_CJK = re.compile(r"[\u4e00-\u9fff]+")
_WORD = re.compile(r"[a-z0-9][a-z0-9\-]*")


def tokenize(text: str) -> list[str]:
    """English words (lower-case, crude plural stemming) plus CJK character bigrams."""
    tokens = []
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        tokens.append(w)
    for run in _CJK.findall(text):
        if len(run) == 1:
            tokens.append(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def search(query: str, base_url: str, limit: int = 10) -> list[dict[str, str]]:
    """Rank PAGES by keyword overlap with `query`; title matches count more."""
    q = set(tokenize(query))
    if not q:
        return []
    scored = []
    for page in PAGES:
        title_toks = set(tokenize(page.title))
        body_toks = tokenize(page.text)
        counts = {t: body_toks.count(t) for t in q}
        matched = [t for t in q if counts[t] or t in title_toks]
        if not matched:
            continue
        score = len(matched) * 2.0 + sum(math.log1p(counts[t]) for t in q) + 1.5 * len(q & title_toks)
        scored.append((score, page))
    scored.sort(key=lambda sp: (-sp[0], sp[1].path))
    results = []
    for _score, page in scored[:limit]:
        results.append(
            {
                "title": page.title,
                "url": base_url + page.path,
                "content": _snippet(page, q),
                "engine": "testsite",
            }
        )
    return results


def _snippet(page: SitePage, q: set[str]) -> str:
    sentences = re.split(r"(?<=[.!?。！？])\s*", page.text)
    best = max(sentences, key=lambda s: (len(q & set(tokenize(s))), bool(re.search(r"\d", s))))
    return best.strip()[:300]


# --- the server ---------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server_version = "EnergyNotes/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        pass

    def _send(self, status: int, ctype: str, body: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        qs = parse_qs(parts.query)
        path = parts.path
        site = self.server.site
        site.requests.append(self.path)
        site.hosts.append(self.headers.get("Host", ""))
        try:
            if path == "/":
                links = "".join(f'<li><a href="{p.path}">{html.escape(p.title)}</a></li>' for p in PAGES)
                self._send(200, "text/html; charset=utf-8", f"<html><head><title>Energy Notes</title></head>"
                           f"<body><h1>Energy Notes</h1><ul>{links}</ul></body></html>".encode())
            elif path == "/search":
                q = (qs.get("q") or [""])[0]
                results = search(q, site.url)
                body = json.dumps({"query": q, "number_of_results": len(results), "results": results})
                self._send(200, "application/json", body.encode())
            elif path == "/redirect":
                self._send(302, "text/plain", b"moved", {"Location": (qs.get("to") or ["/"])[0]})
            elif path == "/redirect-chain":
                n = int((qs.get("n") or ["0"])[0])
                to = f"/redirect-chain?n={n - 1}" if n > 0 else PAGES[0].path
                self._send(302, "text/plain", b"moved", {"Location": to})
            elif path.startswith("/slow"):  # also /slow/search: a SearXNG that hangs
                delay = float((qs.get("delay") or ["5"])[0])
                end = time.monotonic() + delay
                while time.monotonic() < end and not site.stopping.is_set():
                    time.sleep(0.05)
                self._send(200, "text/plain; charset=utf-8", b"finally here\n")
            elif path == "/big":
                self._stream_big(declared="declared" in qs)
            elif path == "/image.png":
                self._send(200, "image/png", PNG_BYTES)
            elif path.startswith("/status/"):
                code = int(path.split("/")[2])  # /status/500 and /status/500/search
                self._send(code, "text/plain", f"status {code}".encode())
            else:
                page = page_by_path(path)
                if page.kind == "pdf":
                    self._send(200, "application/pdf", PDF_BYTES)
                elif page.kind == "text":
                    self._send(200, "text/plain; charset=utf-8", page.text.encode("utf-8"))
                else:
                    self._send(200, "text/html; charset=utf-8", _render_html(page))
        except KeyError:
            self._send(404, "text/plain", b"not found")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self) -> None:
        """/tavily/search: a stand-in for the Tavily API (bearer key "test-key")."""
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length) or b"{}")
        site = self.server.site
        site.requests.append(self.path)
        site.hosts.append(self.headers.get("Host", ""))
        if urlsplit(self.path).path != "/tavily/search":
            self._send(404, "text/plain", b"not found")
        elif self.headers.get("Authorization") != f"Bearer {TAVILY_TEST_KEY}":
            self._send(401, "application/json", b'{"detail": "invalid api key"}')
        else:
            hits = search(str(payload.get("query", "")), site.url, int(payload.get("max_results", 5)))
            results = [{"title": h["title"], "url": h["url"], "content": h["content"], "score": 0.5} for h in hits]
            self._send(200, "application/json", json.dumps({"results": results}).encode())

    def _stream_big(self, declared: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        if declared:
            self.send_header("Content-Length", str(OVERSIZE_BYTES))
        else:
            self.send_header("Connection", "close")  # close-delimited: no length announced
        self.end_headers()
        line = b"energy " * 146 + b"\n"  # ~1 KiB
        sent = 0
        while sent < OVERSIZE_BYTES and not self.server.site.stopping.is_set():
            self.wfile.write(line)
            sent += len(line)
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    site: TestSite


class TestSite:
    """The site on 127.0.0.1:<free port>. Use as a context manager or start()/stop()."""

    __test__ = False  # not a pytest test class

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._addr = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.requests: list[str] = []  # request paths, in order
        self.hosts: list[str] = []  # their Host headers
        self.pages = PAGES

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("TestSite is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def page_url(self, page: SitePage | str) -> str:
        return self.url + (page.path if isinstance(page, SitePage) else page)

    def start(self) -> TestSite:
        if self._server is None:
            self.stopping.clear()
            self._server = _Server(self._addr, _Handler)
            self._server.site = self
            self._thread = threading.Thread(target=self._server.serve_forever, name="test-site", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self.stopping.set()
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> TestSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":  # python -m tests.support.site: serve until Ctrl-C
    with TestSite(port=8765) as running:
        print(f"serving on {running.url}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
