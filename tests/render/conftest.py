"""Fixtures for the renderer tests: small English and Chinese reports with a real figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw

EN_REPORT = """# The State of Solar Power in 2024

Solar power has grown faster than any other energy source over the past decade [1]. \
Costs fell by roughly 90% since 2010 [2][3].

## Cost trends

Module prices dropped sharply in 2023 as manufacturing capacity in China expanded [2]. Utility-scale solar is now the \
cheapest source of new electricity in most markets [3]. Financing costs remain the largest driver of project \
economics in emerging markets [4]. Some analysts expect prices to stabilise in 2025 [1].

| Year | Price ($/W) | Capacity (GW) |
|------|------------:|--------------:|
| 2010 | 2.00 | 40 |
| 2020 | 0.20 | 710 |
| 2023 | 0.12 | 1400 |

## Deployment

- China installed more solar in 2023 than the entire world did in 2022 [1].
- The EU added 56 GW of capacity [5].
- The United States saw record installations despite trade disputes [4].

![Installed capacity by region](figures/capacity.png)

### Grid integration

Higher solar shares require storage and flexible demand. Battery prices fell alongside module prices [2].
<script>alert("xss")</script>

```python
# a comment, not a heading
print("[1] is not a citation here")
```

## References

- [1] [IEA Renewables 2023](https://www.iea.org/reports/renewables-2023)
- [2] [BloombergNEF Solar Outlook](https://about.bnef.com/solar)
- [3] [Lazard LCOE](https://www.lazard.com/lcoe)
- [4] [IRENA Costs](https://www.irena.org/costs)
- [5] [SolarPower Europe](https://www.solarpowereurope.org/)
"""

ZH_REPORT = """# 中国新能源汽车市场研究

近年来，中国新能源汽车市场快速增长[1]。2023年销量超过九百万辆[2]。

## 市场规模

中国已经连续多年成为全球最大的新能源汽车市场[1]。渗透率在2023年达到百分之三十以上[2][3]。

| 年份 | 销量（万辆） |
|------|------------|
| 2022 | 689 |
| 2023 | 950 |

## 政策支持

- 购置税减免政策延续至2027年[3]。
- 充电基础设施建设持续加快[4]。

## 参考文献

- [1] [中国汽车工业协会](https://www.caam.org.cn/)
- [2] [国际能源署报告](https://www.iea.org/)
- [3] [财政部公告](https://www.mof.gov.cn/)
- [4] [国家能源局](https://www.nea.gov.cn/)
"""


def make_figure(path: Path) -> Path:
    """A small bar chart drawn with Pillow (no matplotlib start-up cost)."""
    image = Image.new("RGB", (600, 360), "white")
    draw = ImageDraw.Draw(image)
    for i, height in enumerate((280, 90, 60, 30)):
        draw.rectangle((60 + i * 130, 320 - height, 150 + i * 130, 320), fill=(37, 99, 235))
    draw.line((40, 320, 580, 320), fill="black", width=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with en.md, zh.md and figures/capacity.png, as the reporter lays them out."""
    root = tmp_path_factory.mktemp("report")
    (root / "en.md").write_text(EN_REPORT, encoding="utf-8")
    (root / "zh.md").write_text(ZH_REPORT, encoding="utf-8")
    make_figure(root / "figures" / "capacity.png")
    return root


@pytest.fixture(scope="session")
def figures_dir(report_dir: Path) -> Path:
    return report_dir / "figures"


@pytest.fixture(scope="session")
def en_report() -> str:
    return EN_REPORT


@pytest.fixture(scope="session")
def zh_report() -> str:
    return ZH_REPORT
