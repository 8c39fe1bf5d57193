"""Small builders for knowledge-base tests: a real minimal PDF and a topical corpus."""

from __future__ import annotations


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(lines: list[str], *, title: str | None = None) -> bytes:
    """A valid one-page PDF (Helvetica text, correct xref offsets) that pypdf can read."""
    content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({_pdf_escape(line)}) Tj T*" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content.encode('latin-1'))} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if title:
        objects.append(f"<< /Title ({_pdf_escape(title)}) >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref_at = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    info = f" /Info {len(objects)} 0 R" if title else ""
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


def make_pdf_bomb(*, pages: int = 40, stream_bytes: int = 1_000_000) -> bytes:
    """A small PDF whose one Flate-compressed content stream (~stream_bytes of text operators) is the
    /Contents of every page: ~10 KB on disk, pages × stream_bytes of content to extract."""
    import zlib

    line = "(All work and no play makes Jack a dull boy. ) Tj T* "
    body = "BT /F1 1 Tf 0 0 Td 1 TL " + line * (stream_bytes // len(line)) + "ET"
    packed = zlib.compress(body.encode("latin-1"), 9)
    kids = " ".join(f"{6 + i} 0 R" for i in range(pages))
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length " + str(len(packed)).encode() + b" /Filter /FlateDecode >>\nstream\n" + packed
        + b"\nendstream",
        b"<< >>",  # unused, keeps the page numbering simple
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                b"/Resources << /Font << /F1 3 0 R >> >> >>"] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body_bytes in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body_bytes + b"\nendobj\n"
    xref_at = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    return bytes(out)


# Ten documents on distinct topics (8 English, 2 Chinese) with some shared vocabulary,
# so ranking has to weigh terms rather than just find them.
CORPUS: dict[str, str] = {
    "photosynthesis.md": """\
# Photosynthesis

Photosynthesis is the process by which green plants, algae and some bacteria turn sunlight into chemical
energy. Chlorophyll in the chloroplasts absorbs light, mostly red and blue wavelengths. The light-dependent
reactions split water and release oxygen; the Calvin cycle then fixes carbon dioxide into glucose.
Plants store this sugar as starch and use it for growth. Without photosynthesis there would be almost no
oxygen in the atmosphere and no food chains on land.""",
    "volcanoes.txt": """\
Volcanoes form where molten rock called magma rises through the crust. When pressure from dissolved
gases builds up, an eruption pushes lava, ash and volcanic bombs out of the vent. Shield volcanoes such as
Mauna Loa erupt runny basaltic lava, while stratovolcanoes like Mount St. Helens produce explosive eruptions
with pyroclastic flows. Volcanic ash can ground aircraft and cool the global climate for years.""",
    "black_holes.html": """\
<!doctype html><html><head><title>Black holes</title></head><body><article>
<h1>Black holes</h1>
<p>A black hole is a region of spacetime where gravity is so strong that nothing, not even light, can escape.
The boundary is called the event horizon. Stellar black holes form when massive stars collapse at the end of
their lives; supermassive black holes sit at the centres of galaxies.</p>
<p>In 2019 the Event Horizon Telescope published the first image of the shadow of a black hole in the galaxy M87.
Hawking radiation suggests black holes slowly evaporate over immense timescales.</p>
</article></body></html>""",
    "french_revolution.txt": """\
The French Revolution began in 1789 when the Estates-General met at Versailles amid a fiscal crisis.
On 14 July 1789 crowds stormed the Bastille, a royal fortress and prison in Paris. The National Assembly
abolished feudal privileges and adopted the Declaration of the Rights of Man and of the Citizen. King Louis XVI
was executed in 1793 during the Reign of Terror, and Napoleon Bonaparte seized power in 1799.""",
    "coffee.md": """\
# Brewing coffee

Good coffee depends on the grind size, water temperature and brew time. Espresso forces hot water through
finely ground coffee at about nine bars of pressure, and a shot takes 25 to 30 seconds. A coarse grind suits the
French press, where the coffee steeps for four minutes. Under-extraction tastes sour; over-extraction tastes
bitter. Coffee cherries are processed by washing or natural drying, and some processes involve fermentation.""",
    "sourdough.txt": """\
Sourdough bread is leavened by a starter: a culture of wild yeast and lactic acid bacteria kept alive by
regular feeding with flour and water. Fermentation of the dough produces carbon dioxide, which makes the bread
rise, and lactic and acetic acids, which give the sour flavour. A long, cold fermentation develops more taste.
Bakers judge a starter by how fast it doubles after feeding.""",
    "tcp.md": """\
# TCP congestion control

TCP avoids overwhelming the network with congestion control. The sender keeps a congestion window that limits
how many unacknowledged packets may be in flight. Slow start grows the window exponentially until packet loss
or a threshold is reached; congestion avoidance then grows it linearly. Packet loss detected by three duplicate
acknowledgements halves the window (fast recovery). Newer algorithms such as CUBIC and BBR change how the
window reacts to loss and delay.""",
    "honeybees.txt": """\
Honeybees live in colonies with a single queen, thousands of female workers and some male drones. A forager
that finds flowers returns to the hive and performs the waggle dance: the angle of the dance tells other bees the
direction of the food relative to the sun, and its duration tells the distance. Bees make honey from nectar and
build combs of wax. Colony collapse disorder and pesticides threaten bee populations.""",
    "panda.txt": """\
大熊猫是中国特有的哺乳动物，主要生活在四川、陕西和甘肃的山区竹林中。大熊猫的食物几乎全部是竹子，
每天要吃十几公斤的竹子和竹笋。野生大熊猫数量曾经很少，经过多年的保护，现在已经超过一千八百只。
大熊猫繁殖率低，幼崽出生时只有一百克左右。""",
    "great_wall.md": """\
# 长城

长城是中国古代的军事防御工程，总长度超过两万公里。最早的城墙修建于春秋战国时期，秦始皇统一中国后把各国的城墙连接起来。
我们今天看到的大部分长城是明朝修建的，用砖和石头砌成，沿线设有烽火台和关口，例如山海关和嘉峪关。
长城在一九八七年被列入世界文化遗产。""",
}
