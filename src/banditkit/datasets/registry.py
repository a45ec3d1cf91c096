"""The dataset registry: official homes, file names, download sources and checksums.

Every file a loader reads is listed here with the checksums it must match. A file is accepted
when **any** of its references matches:

    sha256          the bytes exactly as in the reference copy (docs/datasets.md section 2);
    text_sha256     the text after normalising line endings and runs of blanks (each line's
                    fields joined by one space, empty lines dropped), so that a copy saved with
                    CRLF instead of LF, or tabs instead of spaces, is still recognised;
    content_sha256  the decompressed bytes of a ``.gz`` file (Fashion-MNIST: the Debian copy is
                    re-gzipped, so only the content matches upstream);
    git_blob        the git blob id (``git hash-object FILE``), the only published reference for
                    the complete Covertype file.

A file with no reference at all (the complete Open Bandit Dataset) is reported as unverified.

The reference layout is ``<data home>/<directory>/<file>`` (docs/datasets.md section 1).
"""

from __future__ import annotations

from banditkit.core.validation import check_choice
from banditkit.datasets.entries import DataFile, DatasetInfo

__all__ = ["DATASETS", "DataFile", "DatasetInfo", "dataset_info"]

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"


def _uci(
    path: str,
    name: str,
    size: int,
    sha256: str,
    text_sha256: str | None = None,
    **kw: object,
) -> DataFile:
    return DataFile(
        name=name,
        size=size,
        sha256=sha256,
        text_sha256=text_sha256,
        urls=(f"{_UCI}/{path}",),
        **kw,  # type: ignore[arg-type]
    )


_MNIST_URLS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
_FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_OBP_SDIST = "https://files.pythonhosted.org/packages/source/o/obp/obp-0.5.7.tar.gz"
_OBD_SAMPLE = {
    # (behaviour policy, campaign): (log size, log sha256, item_context sha256)
    ("random", "all"): (
        5039451,
        "7168295b6e0a9eabcf3392320a5dd434e542b68e705d5cd9491499af589812f1",
        "eba04cc23d5f130a93ff174c5392986882b94c3839433cb8143870eaa6221358",
    ),
    ("random", "men"): (
        3336811,
        "ede6d08c6877f99cd3770f7d09e26c738e6aa6de4445ccccfb1356ba5d06b1eb",
        "6d855c2b7e917d0448d71bbe62c023147495882c0fdc8c41e86fef86abf9fe09",
    ),
    ("random", "women"): (
        3817771,
        "e65f3bd3beb17664fa69cc129bf7bf852a775f8ffa630506e505fc905315bb34",
        "b1ca4905f97703d196004f2ad4552c1e90c2afad8b50688d333b0d2dc0b33147",
    ),
    ("bts", "all"): (
        5084456,
        "0ad874e4dbf6902f0845dd478ad8dde5ef6903583d3ffaace78411bdad064106",
        "5d4359ba1cfa3ae88f0f1bae66bd633859fe6323817183632ee57b83539d9153",
    ),
    ("bts", "men"): (
        3240432,
        "db6d1f7ed2d591ba521533e45286d4c1fba7fe57a8ad2e80342210335f43c527",
        "3b411ed6b0471316321a6b93f4f756bb25888eac6218cd71d0b603d41d85732d",
    ),
    ("bts", "women"): (
        3722697,
        "e5d1b49a39b608585a2f3014a3f54970430cd37a495c1b73fceb85cdf428a5b8",
        "a56295bad066a558eb783055afd9279f5f4e209a4776eafc22151c53f0ac89d4",
    ),
}
_ITEM_CONTEXT_SIZE = {"all": 10041, "men": 4287, "women": 5792}


def _obd_files() -> tuple[DataFile, ...]:
    files = []
    for (policy, campaign), (size, log_sha, item_sha) in _OBD_SAMPLE.items():
        group = f"{policy}/{campaign}"
        for fname, fsize, sha in (
            (f"{campaign}.csv", size, log_sha),
            ("item_context.csv", _ITEM_CONTEXT_SIZE[campaign], item_sha),
        ):
            rel = f"{group}/{fname}"
            files.append(
                DataFile(
                    name=rel,
                    size=fsize,
                    sha256=sha,
                    urls=(_OBP_SDIST,),
                    member=f"obp-0.5.7/obp/dataset/obd/{rel}",
                    group=group,
                )
            )
    files.append(
        DataFile(
            name="README.md",
            size=3170,
            sha256="46bba393a44b63ddbb735d21d48ea447a073261eac93b4f06e1b19e9b41db2fe",
            optional=True,
        )
    )
    return tuple(files)


def _idx_files(
    urls: tuple[str, ...], table: dict[str, tuple[int, str, str]]
) -> tuple[DataFile, ...]:
    return tuple(
        DataFile(
            name=name,
            size=size,
            sha256=sha,
            content_sha256=content,
            urls=tuple(u + name for u in urls),
        )
        for name, (size, sha, content) in table.items()
    )


DATASETS: dict[str, DatasetInfo] = {
    "digits": DatasetInfo(
        name="digits",
        title="Optical recognition of handwritten digits (scikit-learn's bundled copy)",
        directory="",
        home="https://archive.ics.uci.edu/dataset/80/optical+recognition+of+handwritten+digits",
        licence="CC BY 4.0 (UCI); ships with scikit-learn",
        kind="classification",
        files=(),
        rows=1797,
        features=64,
        classes=10,
        notes="Embedded default: read from scikit-learn, never downloaded.",
    ),
    "mushroom": DatasetInfo(
        name="mushroom",
        title="UCI Mushroom",
        directory="mushroom",
        home="https://archive.ics.uci.edu/dataset/73/mushroom",
        licence="CC BY 4.0",
        kind="classification",
        files=(
            _uci(
                "mushroom/agaricus-lepiota.data",
                "agaricus-lepiota.data",
                373704,
                "e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e",
                "5f337a91aba07bec5caaad73decfce48dcc34b265e8fe864652699ef39a5178e",
            ),
            _uci(
                "mushroom/agaricus-lepiota.names",
                "agaricus-lepiota.names",
                6816,
                "79e440566900901a5900febc1f3c9659e3746e306a5fa1aed4d084a1e4da76fd",
                optional=True,
            ),
        ),
        rows=8124,
        features=22,
        classes=2,
    ),
    "shuttle": DatasetInfo(
        name="shuttle",
        title="UCI Statlog (Shuttle)",
        directory="shuttle",
        home="https://archive.ics.uci.edu/dataset/148/statlog+shuttle",
        licence="CC BY 4.0",
        kind="classification",
        files=(
            _uci(
                "statlog/shuttle/shuttle.trn.Z",
                "shuttle.trn",
                1153518,
                "87b24ee9fb5137e1d417659cf905d84d0e15342bbaa60770f1ae83da1a38200a",
                "c215a6f9536ec438771559bdf66e074de85d7761de4cebcd699bd5d524a8fc4a",
                compression="Z",
            ),
            _uci(
                "statlog/shuttle/shuttle.tst",
                "shuttle.tst",
                384257,
                "4d06df909e29d5f908fcbce4e003c8038a7bb5230b57820b4b87be6f38b1c747",
                "5e69152b362cad3c15493507b92a3c429f24ee21f9e889cb5f2e012605153a7f",
            ),
            _uci(
                "statlog/shuttle/shuttle.doc",
                "shuttle.doc",
                1273,
                "c46e3f4481b514df9311046cb64a4a1adefd13663ccad375e27c404e3d829a37",
                optional=True,
            ),
        ),
        rows=58000,
        features=9,
        classes=7,
        notes="split='train' gives shuttle.trn only (43,500 rows, the deep-bandit showdown's "
        "'statlog'); the default 'all' is train + test (58,000 rows, OpenML shuttle v1).",
    ),
    "magic": DatasetInfo(
        name="magic",
        title="UCI MAGIC Gamma Telescope",
        directory="magic",
        home="https://archive.ics.uci.edu/dataset/159/magic+gamma+telescope",
        licence="CC BY 4.0",
        kind="classification",
        files=(
            _uci(
                "magic/magic04.data",
                "magic04.data",
                1477391,
                "e9314b7ebd4b4b59a3b3d65f7316663963777b16a46786877651dbbaa640b36a",
                "042bcf99730d7e53b60e998fe2f2474b08dcb049672113bf2d79f06d1bfd846c",
            ),
            _uci(
                "magic/magic04.names",
                "magic04.names",
                5400,
                "6b74a329008ea6d062d0c0acf34f0a4aa0e7ce7d1aaeebce4ae5995c06a7abc2",
                optional=True,
            ),
        ),
        rows=19020,
        features=10,
        classes=2,
    ),
    "adult": DatasetInfo(
        name="adult",
        title="UCI Adult (Census Income)",
        directory="adult",
        home="https://archive.ics.uci.edu/dataset/2/adult",
        licence="CC BY 4.0",
        kind="classification",
        files=(
            _uci(
                "adult/adult.data",
                "adult.data",
                3974305,
                "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
                "ea895aae047aa83ca757e3024a029be8b11806c656ad2c5b1efd8cec28af19ad",
            ),
            _uci(
                "adult/adult.test",
                "adult.test",
                2003153,
                "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
                "cef936265eaa826d9b44c86da611553fb99772b632b60ef8577a97fe8efdb2e3",
            ),
            _uci(
                "adult/adult.names",
                "adult.names",
                5229,
                "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
                optional=True,
            ),
        ),
        rows=48842,
        features=14,
        classes=2,
    ),
    "covertype": DatasetInfo(
        name="covertype",
        title="UCI Covertype",
        directory="covertype",
        home="https://archive.ics.uci.edu/dataset/31/covertype",
        licence="CC BY 4.0 (covtype.info: reuse unlimited with retention of the copyright "
        "notice for Jock A. Blackard and Colorado State University)",
        kind="classification",
        files=(
            DataFile(
                name="covtype.data.gz",
                git_blob="0e81fd7893e73cf91a31a261a2ed3625d415a146",
                urls=(f"{_UCI}/covtype/covtype.data.gz",),
                group="full-gz",
            ),
            DataFile(
                name="covtype.data",
                git_blob="6c537df81418f90373454a35f78549d5031719d3",
                group="full-raw",
            ),
            DataFile(
                name="covertype_small_features.csv.gz",
                size=2021365,
                sha256="2249f30287ef7730d0584c2d2d96332538de08c0ac9d3bd67806e5043c8cd5ed",
                group="small",
            ),
            DataFile(
                name="covertype_small_labels.csv.gz",
                size=31019,
                sha256="43d3047959d563fd5feeca4b680666a9890bdb04a5f734c6760e3c68a2e5f7b7",
                group="small",
            ),
            DataFile(
                name="covtype_first15120.data.gz",
                size=292199,
                sha256="bfd0677e77094aaa96dd9a32cbc13d26c5b839c52b7278a17a376590413af575",
                content_sha256="de9010addc936a0991f54ee1a51ab8bb3c3b245aad7abdf97e48fbeec3c23b10",
                group="first15120",
            ),
            DataFile(
                name="covtype.info",
                size=14610,
                sha256="15f192a8cbebbf26af940301727d1795b8ca92a80dc1cc6b3bdad2af9546bc35",
                optional=True,
                group="full-gz",
            ),
            DataFile(
                name="old_covtype.info",
                size=4847,
                sha256="c7d7457a5dba6ae09e00c593977f81bd1154f4774ab1b68a62fef390da629ba8",
                optional=True,
                group="full-gz",
            ),
        ),
        rows=581012,
        features=54,
        classes=7,
        groups=("full-gz", "full-raw", "small", "first15120"),
        notes="The complete covtype.data(.gz) (581,012 rows) is read when present; otherwise "
        "mlpack's documented 100,000-row random subset ('small') or the first 15,120 official "
        "rows ('first15120'). Results on a subset say so in Dataset.meta['subset'].",
    ),
    "mnist": DatasetInfo(
        name="mnist",
        title="MNIST handwritten digits",
        directory="mnist",
        home="http://yann.lecun.com/exdb/mnist/",
        licence="commonly distributed under CC BY-SA 3.0",
        kind="classification",
        files=_idx_files(
            _MNIST_URLS,
            {
                "train-images-idx3-ubyte.gz": (
                    9912422,
                    "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
                    "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
                ),
                "train-labels-idx1-ubyte.gz": (
                    28881,
                    "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
                    "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
                ),
                "t10k-images-idx3-ubyte.gz": (
                    1648877,
                    "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
                    "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
                ),
                "t10k-labels-idx1-ubyte.gz": (
                    4542,
                    "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
                    "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
                ),
            },
        ),
        rows=70000,
        features=784,
        classes=10,
        citation="Y. LeCun, L. Bottou, Y. Bengio, P. Haffner. Gradient-based learning applied "
        "to document recognition. Proc. IEEE, 1998.",
    ),
    "fashion-mnist": DatasetInfo(
        name="fashion-mnist",
        title="Fashion-MNIST",
        directory="fashion_mnist",
        home="https://github.com/zalandoresearch/fashion-mnist",
        licence="MIT",
        kind="classification",
        files=_idx_files(
            (_FASHION_URL,),
            {
                "train-images-idx3-ubyte.gz": (
                    26421856,
                    "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
                    "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
                ),
                "train-labels-idx1-ubyte.gz": (
                    29491,
                    "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
                    "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
                ),
                "t10k-images-idx3-ubyte.gz": (
                    4422079,
                    "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
                    "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
                ),
                "t10k-labels-idx1-ubyte.gz": (
                    5125,
                    "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
                    "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
                ),
            },
        ),
        rows=70000,
        features=784,
        classes=10,
        citation="H. Xiao, K. Rasul, R. Vollgraf. Fashion-MNIST. arXiv:1708.07747, 2017.",
        notes="The reference copy is Debian's re-gzipped one: files are accepted when their "
        "decompressed content matches upstream (content_sha256).",
    ),
    "banknote": DatasetInfo(
        name="banknote",
        title="UCI Banknote Authentication",
        directory="banknote",
        home="https://archive.ics.uci.edu/dataset/267/banknote+authentication",
        licence="CC BY 4.0",
        kind="classification",
        files=(
            _uci(
                "00267/data_banknote_authentication.txt",
                "data_banknote_authentication.txt",
                46400,
                "d0539aaed2139ba7a587b3e34fb345ce503ff7d5d33dbf9912d8e195ce425cb9",
                "564ac22b61d87388b1662adee2867e5d382aae78afb0bf5d6745c1a843174b8e",
            ),
        ),
        rows=1372,
        features=4,
        classes=2,
    ),
    "phoneme": DatasetInfo(
        name="phoneme",
        title="Phoneme (ELENA / KEEL / OpenML 1489)",
        directory="phoneme",
        home="https://sci2s.ugr.es/keel/dataset.php?cod=105",
        licence="none stated by ELENA or KEEL",
        kind="classification",
        files=(
            DataFile(
                name="phoneme.dat",
                size=174983,
                sha256="fe7e701fc5b4a14235f84f2a45ed0f4ac071a9adf59cd1297e69bab4e395d6c6",
                text_sha256="c0a047f3fc31c15649bd14c36b671e0c6cf2caa1d17cc131129c7ac92d284deb",
                urls=(
                    "https://sci2s.ugr.es/keel/dataset/data/classification/phoneme.zip",
                ),
                member="phoneme.dat",
            ),
        ),
        rows=5404,
        features=5,
        classes=2,
        notes="Substitution: [Bae2025, App. J] names 'Connectionist Bench (Nettalk "
        "Corpus)'; banditkit uses the widely used KEEL/OpenML phoneme table (5,404 x 5, K = 2).",
    ),
    "obd": DatasetInfo(
        name="obd",
        title="Open Bandit Dataset (ZOZOTOWN), 10,000-row sample per log",
        directory="obd",
        home="https://research.zozo.com/data.html",
        licence="described by its authors as CC BY 4.0 (not confirmed from a licence file)",
        kind="logged-bandit",
        files=_obd_files(),
        rows=10000,
        features=90,
        classes=80,
        groups=tuple(f"{p}/{c}" for p, c in _OBD_SAMPLE),
        citation="Y. Saito, S. Aihara, M. Matsutani, Y. Narita. Open bandit dataset and "
        "pipeline: towards realistic and reproducible off-policy evaluation. "
        "arXiv:2008.07146, 2020.",
        notes="The sample ships in the obp 0.5.7 sdist. The complete dataset (no published "
        "checksums) is read from <data home>/obd/open_bandit_dataset/{policy}/{campaign}/ "
        "when present (extract open_bandit_dataset.zip inside <data home>/obd/).",
    ),
}


def dataset_info(name: str) -> DatasetInfo:
    """The registry entry of dataset ``name``.

    Raises:
        ValueError: For an unknown name (with close matches).

    Example:
        >>> dataset_info("magic").classes
        2
    """
    check_choice("dataset", name, list(DATASETS))
    return DATASETS[name]
